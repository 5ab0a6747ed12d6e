#!/usr/bin/env bash
# notifications/tools/list_changed reaches a running session: over loopback HTTP (a scripted
# OpenAI-compatible server), a tool of tests/mcp/test_server.js adds the tool "extra" and
# says the list changed; the next request of the same turn offers t__extra and its call
# works; "extra" then removes itself, the request after that no longer offers it and a call
# to it fails clearly. The journal holds each new list as a tools.changed event before the
# model call that offered it, and replays.
. "$(dirname "$0")/lib.sh"
httpd="$(realpath "$3")"
mkdir -p "$tmp/script"
sse_call() { # FILE ID NAME ARGS
  local args
  args=$(jq -cn --argjson a "$4" '$a | tojson')
  {
    echo "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"$2\",\"type\":\"function\",\"function\":{\"name\":\"$3\",\"arguments\":$args}}]}}]}"
    echo
    echo 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}'
    echo
    echo 'data: [DONE]'
    echo
  } >"$1"
}
sse_call "$tmp/script/01.sse" c1 t__add_tool '{}'
sse_call "$tmp/script/02.sse" c2 t__extra '{}'
sse_call "$tmp/script/03.sse" c3 t__extra '{"drop": true}'
sse_call "$tmp/script/04.sse" c4 t__extra '{}'
printf '%s\n\n' 'data: {"choices":[{"index":0,"delta":{"content":"done"}}]}' \
  'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}' 'data: [DONE]' >"$tmp/script/05.sse"
cat >"$tmp/tools.json" <<JSON
{"mcp": [{"name": "t", "command": ["node", "$test_server"], "timeout": "20s", "start_timeout": "30s"}]}
JSON
start_server --script "$tmp/script"
OPENAI_API_KEY=sk-test timeout 60 "$agentc" run --base-url "$base" --model m --tools "$tmp/tools.json" \
  --journal "$tmp/journal" --jsonl "change your tools" >"$tmp/out" 2>"$tmp/err" \
  || fail "run exited $?: $(cat "$tmp/err")"
expect_result c1 true '^added$'
expect_result c2 true '^extra works$'
expect_result c3 true '^extra dropped$'
expect_result c4 false 'extra'
tail -n1 "$tmp/out" | jq -e '.type == "done" and .status == "completed"' >/dev/null || fail "not completed: $(tail -n1 "$tmp/out")"
# what each request offered
[ "$(wc -l <"$tmp/requests")" -eq 5 ] || fail "expected 5 requests, got $(wc -l <"$tmp/requests")"
offered() { sed -n "${1}p" "$tmp/requests" | jq -c '[.body.tools[].function.name] | map(select(startswith("t__"))) | sort'; }
for i in 1 2 3 4 5; do
  has=$(offered "$i" | jq 'index("t__extra") != null')
  case $i in 2|3) want=true ;; *) want=false ;; esac
  [ "$has" = "$want" ] || fail "request $i offers t__extra: $has, want $want: $(offered "$i")"
  offered "$i" | jq -e 'index("t__echo") != null' >/dev/null || fail "request $i lost the other tools: $(offered "$i")"
done
# the journal: three tools.changed events, each with the whole list, each before the next call:
# the server's first list (it starts in the background, after the session's spawn), then the
# two changes
jq -e -s '[.[] | select(.ev == "tools.changed") | .data.tools | map(.name) | index("t::extra") != null] == [false, true, false]' \
  "$tmp/journal" >/dev/null || fail "tools.changed events: $(jq -c -s '[.[] | select(.ev == "tools.changed") | .data.tools | map(.name)]' "$tmp/journal")"
jq -e -s '[.[] | select(.ev == "tools.changed" or .ev == "llm.started" or (.ev == "tool.completed" and .data.id != null)) | .ev] |
  . as $e | [range(0; length) | select($e[.] == "tools.changed")] | all(. as $i | ($i == 0 or $e[$i - 1] == "tool.completed") and $e[$i + 1] == "llm.started")' \
  "$tmp/journal" >/dev/null || fail "tools.changed is not between the tool result and the next call: $(jq -c -s 'map(.ev // empty)' "$tmp/journal")"
"$agentc" replay "$tmp/journal" --check >"$tmp/replay" 2>&1 || fail "the journal does not replay: $(cat "$tmp/replay")"
echo ok
