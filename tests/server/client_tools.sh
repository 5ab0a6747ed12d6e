#!/usr/bin/env bash
# Client tools on the OpenAI-compatible front (docs/serve.md): the official `openai` npm
# package drives two requests, streamed and not (client_tools.mjs); then curl: a tool named
# like one of the agent's (400), partial results (400 naming the missing ids), an id the
# session does not wait for (400), another token's follow-up (never matched: a fresh
# session), a second follow-up (409), an unmatched one (a fresh session with the history),
# the streamed chunks, an agent whose request settings forbid tools (X-Agentc-Ignored), a
# restart while a session waits (its calls answered "interrupted"), the timeout ("the client
# did not answer"), and the sessions' journals replayed with --check.
set -uo pipefail
agentc=$1 modules=$2
here="$(cd "$(dirname "$0")" && pwd)"
for c in curl jq node; do command -v $c >/dev/null || { echo "SKIP: $c needed"; exit 77; }; done
modules=$(mkdir -p "$modules" && cd "$modules" && pwd)
mod="$modules/node_modules/openai"
if [ ! -f "$mod/index.mjs" ]; then
  bash "$here/npm_install.sh" "$modules" || { echo "SKIP: the openai npm package cannot be installed"; exit 77; }
fi
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (client_tools.sh:${BASH_LINENO[0]}): $*" >&2; cat "$tmp/err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
call() { printf '{"id": "%s", "name": "%s", "arguments": "{\\"%s\\": \\"%s\\"}"}' "$1" "$2" "$3" "$4"; }
printf '{"content": "Let me look.", "tool_calls": [%s, %s, %s]}\n{"content": "The lookup said sunny."}\n' \
  "$(call c1 lookup q weather)" "$(call c2 calculator expression '6*7')" "$(call c3 lookup q wind)" >"$tmp/script"
printf 'tok-client-tools-a-0123456789 alice\ntok-client-tools-b-0123456789 bob\n' >"$tmp/tokens"
A=tok-client-tools-a-0123456789 B=tok-client-tools-b-0123456789
start() { # start [serve options...]
  rm -f "$tmp/port"
  "$agentc" serve --provider script --script "$tmp/script" --tools builtin:calculator --tokens "$tmp/tokens" \
    --listen 127.0.0.1:0 --port-file "$tmp/port" "$@" 2>"$tmp/err" &
  pid=$!
  wait_for test -s "$tmp/port" || fail "the server did not start"
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
stop() { kill -TERM "$pid"; wait "$pid" || fail "exit status $?"; pid=; }
# chat TOKEN BODY: the reply in $tmp/body, its headers in $tmp/head, the status echoed
chat() {
  curl -s --max-time 20 -D "$tmp/head" -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer $1" \
    -H 'Content-Type: application/json' --data-binary "$2" "$url/v1/chat/completions"
}
sess() { curl -s --max-time 5 -H "Authorization: Bearer $1" "$url/v1/sessions/$2"; }
TOOLS='[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]'
ASK="{\"model\": \"agentc\", \"tools\": $TOOLS, \"messages\": [{\"role\": \"user\", \"content\": \"weather?\"}]}"
# follow TOOL_CALLS_JSON ID...: a follow-up answering those ids (of the calls in TOOL_CALLS_JSON)
follow() {
  local calls=$1; shift
  jq -cn --argjson calls "$calls" --argjson tools "$TOOLS" --args '{model: "agentc", tools: $tools, messages:
    ([{role: "user", content: "weather?"}, {role: "assistant", content: "Let me look.", tool_calls: $calls}]
     + [$ARGS.positional[] | {role: "tool", tool_call_id: ., content: ("result for " + .)}])}' "$@"
}

start --db "$tmp/db.sqlite" --client-tool-timeout 30

# ---- the openai package: streamed and not ----
OPENAI_MODULE="$mod" timeout 90 node "$here/client_tools.mjs" "$url/v1" "$A" || fail "the openai client failed"

# ---- a name of the agent's own tools, a bad shape ----
code=$(chat "$A" '{"tools": [{"type": "function", "function": {"name": "calculator"}}], "messages": [{"role": "user", "content": "x"}]}')
[ "$code" = 400 ] && jq -e '.error.code == "invalid_tools" and (.error.message | test("calculator.*agent"))' "$tmp/body" >/dev/null \
  || fail "a clash: $code $(cat "$tmp/body")"
code=$(chat "$A" '{"tools": [{"type": "retrieval"}], "messages": [{"role": "user", "content": "x"}]}')
[ "$code" = 400 ] && jq -e '.error.message | test("function")' "$tmp/body" >/dev/null || fail "a bad shape: $code $(cat "$tmp/body")"

# ---- one waiting session: partial results, unknown ids, another token, then the answer ----
code=$(chat "$A" "$ASK")
[ "$code" = 200 ] && jq -e '.choices[0].finish_reason == "tool_calls"' "$tmp/body" >/dev/null || fail "ask: $code $(cat "$tmp/body")"
calls=$(jq -c '.choices[0].message.tool_calls' "$tmp/body")
id1=$(jq -r '.[0].id' <<<"$calls") id3=$(jq -r '.[1].id' <<<"$calls")
sid=$(jq -r .id "$tmp/body")
[ "$id1" = "agentc_${sid}_1" ] && [ "$id3" = "agentc_${sid}_3" ] || fail "ids: $id1 $id3 (session $sid)"
code=$(chat "$A" "$(follow "$calls" "$id1")")
[ "$code" = 400 ] && jq -e --arg id "$id3" '.error.code == "missing_tool_results" and (.error.message | contains($id))' "$tmp/body" >/dev/null \
  || fail "partial results: $code $(cat "$tmp/body")"
code=$(chat "$A" "$(follow "$calls" "$id1" "$id3" "agentc_${sid}_9")")
[ "$code" = 400 ] && jq -e '.error.code == "unknown_tool_call"' "$tmp/body" >/dev/null || fail "an unknown id: $code $(cat "$tmp/body")"
# a result without its id, a result that is not text: 400, the session still waits
code=$(chat "$A" "$(follow "$calls" "$id1" "$id3" | jq -c '.messages += [{role: "tool", content: "no id"}]')")
[ "$code" = 400 ] && jq -e '.error.code == "unknown_tool_call"' "$tmp/body" >/dev/null || fail "a result without an id: $code $(cat "$tmp/body")"
code=$(chat "$A" "$(follow "$calls" "$id1" "$id3" | jq -c '.messages[-1].content = 42')")
[ "$code" = 400 ] && jq -e '.error.code == "invalid_tool_results"' "$tmp/body" >/dev/null || fail "a result not text: $code $(cat "$tmp/body")"
# another token's follow-up with these ids never reaches the session: a fresh one of its own
code=$(chat "$B" "$(follow "$calls" "$id1" "$id3")")
[ "$code" = 200 ] || fail "bob's follow-up: $code $(cat "$tmp/body")"
jq -e --arg s "$sid" '.id != $s' "$tmp/body" >/dev/null || fail "bob reached alice's session: $(cat "$tmp/body")"
sess "$A" "$sid" | jq -e --arg a "$id1" --arg b "$id3" '.status == "running" and ([.tool_calls[] | select(has("result") | not)] | length) == 2
  and .client_calls == [{id: $a, call: "c1", name: "lookup"}, {id: $b, call: "c3", name: "lookup"}]' >/dev/null \
  || fail "alice's session no longer waits: $(sess "$A" "$sid")"
code=$(chat "$A" "$(follow "$calls" "$id1" "$id3")")
[ "$code" = 200 ] && jq -e '.choices[0].message.content == "The lookup said sunny." and .choices[0].finish_reason == "stop"' "$tmp/body" >/dev/null \
  || fail "the follow-up: $code $(cat "$tmp/body")"
sess "$A" "$sid" | jq -e --arg r "result for $id1" '.status == "idle" and ([.tool_calls[] | select(.id == "c1") | .result] == [$r]) and (has("client_calls") | not)' >/dev/null \
  || fail "the result did not reach the session: $(sess "$A" "$sid")"
# a second follow-up: 409
code=$(chat "$A" "$(follow "$calls" "$id1" "$id3")")
[ "$code" = 409 ] && jq -e '.error.code == "already_answered"' "$tmp/body" >/dev/null || fail "a duplicate: $code $(cat "$tmp/body")"
# ids that name no waiting session: a fresh session whose history the request carries
code=$(chat "$A" "$(follow '[{"id": "call_x", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]' call_x)")
[ "$code" = 200 ] || fail "an unmatched follow-up: $code $(cat "$tmp/body")"
fresh=$(jq -r .id "$tmp/body")
sess "$A" "$fresh" | jq -e '[.messages[] | select(.role == "user") | .content] == ["weather?", "[result of call_x] result for call_x"]' >/dev/null \
  || fail "the fresh session's history: $(sess "$A" "$fresh" | jq -c .messages)"

# two follow-ups at once: one continues the session, the other is 409
code=$(chat "$A" "$ASK")
dcalls=$(jq -c '.choices[0].message.tool_calls' "$tmp/body")
dup=$(follow "$dcalls" $(jq -r '.[].id' <<<"$dcalls"))
dups=()
for k in 1 2; do
  curl -s --max-time 20 -o "$tmp/dup$k" -w '%{http_code}' -H "Authorization: Bearer $A" \
    -H 'Content-Type: application/json' --data-binary "$dup" "$url/v1/chat/completions" >"$tmp/dup$k.code" &
  dups+=("$!")
done
wait "${dups[@]}"
[ "$(printf '%s\n' "$(cat "$tmp/dup1.code")" "$(cat "$tmp/dup2.code")" | sort | tr '\n' ' ')" = "200 409 " ] \
  || fail "two follow-ups at once: $(cat "$tmp/dup1.code" "$tmp/dup1") / $(cat "$tmp/dup2.code" "$tmp/dup2")"

# ---- streamed: the calls' chunks as OpenAI sends them ----
curl -sN --max-time 20 -H "Authorization: Bearer $A" -H 'Content-Type: application/json' \
  --data-binary "$(jq -c '. + {stream: true}' <<<"$ASK")" "$url/v1/chat/completions" >"$tmp/sse"
grep '^data: {' "$tmp/sse" | sed 's/^data: //' | jq -s -e '
  ([.[].choices[0].delta.tool_calls // empty | .[]] | map({index, id, name: .function.name}) | length == 2
    and .[0].index == 0 and .[1].index == 1 and all(.[]; .name == "lookup" and (.id | test("^agentc_chatcmpl-[0-9]+_[13]$"))))
  and (last.choices[0].finish_reason == "tool_calls")' >/dev/null || fail "streamed chunks: $(cat "$tmp/sse")"
tail -n 2 "$tmp/sse" | grep -q '^data: \[DONE\]' || fail "no [DONE]: $(cat "$tmp/sse")"
streamed_sid=$(grep -o 'agentc_chatcmpl-[0-9]*_1' "$tmp/sse" | head -1 | sed 's/^agentc_//; s/_1$//')

# ---- a restart while a session waits: its calls are answered "interrupted" ----
code=$(chat "$A" "$ASK")
[ "$code" = 200 ] || fail "ask before the restart: $code"
rcalls=$(jq -c '.choices[0].message.tool_calls' "$tmp/body") rsid=$(jq -r .id "$tmp/body")
kill -9 "$pid"
wait "$pid" 2>/dev/null
start --db "$tmp/db.sqlite" --client-tool-timeout 1
wait_for sh -c "curl -s -H 'Authorization: Bearer $A' $url/v1/sessions/$rsid | jq -e '.status == \"idle\"' >/dev/null" \
  || fail "the waiting session did not finish after the restart: $(sess "$A" "$rsid")"
sess "$A" "$rsid" | jq -e '[.tool_calls[] | select(.name == "lookup") | .result | startswith("interrupted")] == [true, true]' >/dev/null \
  || fail "after the restart: $(sess "$A" "$rsid" | jq -c .tool_calls)"
code=$(chat "$A" "$(follow "$rcalls" $(jq -r '.[].id' <<<"$rcalls"))")
[ "$code" = 200 ] && jq -e --arg s "$rsid" '.id != $s' "$tmp/body" >/dev/null || fail "a follow-up after the restart: $code $(cat "$tmp/body")"
# the streamed session, left waiting by its client, too
sess "$A" "$streamed_sid" | jq -e '.status == "idle"' >/dev/null || fail "the streamed session: $(sess "$A" "$streamed_sid")"

# ---- the timeout: the calls fail, the turn goes on ----
code=$(chat "$A" "$ASK")
tsid=$(jq -r .id "$tmp/body")
wait_for sh -c "curl -s -H 'Authorization: Bearer $A' $url/v1/sessions/$tsid | jq -e '.status == \"idle\"' >/dev/null" \
  || fail "the timeout did not answer the calls: $(sess "$A" "$tsid")"
sess "$A" "$tsid" | jq -e '[.tool_calls[] | select(.name == "lookup") | .result | startswith("the client did not answer")] == [true, true] and .answer == "The lookup said sunny."' >/dev/null \
  || fail "after the timeout: $(sess "$A" "$tsid" | jq -c '.tool_calls, .answer')"
stop

# ---- the journals replay with --check ----
for s in "$sid" "$rsid" "$tsid"; do
  "$agentc" sessions export "alice/$s" --db "$tmp/db.sqlite" -o "$tmp/$s.jsonl" >/dev/null 2>&1 || fail "export $s"
  grep -q '"client_tools"' "$tmp/$s.jsonl" || fail "$s: no client tools in the spawn event"
  "$agentc" replay "$tmp/$s.jsonl" --check >"$tmp/replay.out" 2>&1 || fail "replay --check $s: $(cat "$tmp/replay.out")"
done

# ---- an agent whose request settings forbid tool calls: the request's tools are ignored ----
start --tool-choice none
code=$(chat "$A" "$ASK")
[ "$code" = 200 ] && jq -e '.choices[0].finish_reason == "stop"' "$tmp/body" >/dev/null || fail "tool_choice none: $code $(cat "$tmp/body")"
grep -qi '^x-agentc-ignored: tools' "$tmp/head" || fail "tools not named ignored: $(cat "$tmp/head")"
stop
echo "client tools: ok"
