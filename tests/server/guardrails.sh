#!/usr/bin/env bash
# agentc serve with examples/specs/guardrails.fsm (docs/spec-language.md, Guardrails): an output
# guardrail that trips keeps the answer from the session's SSE stream and from the OpenAI front
# (streamed and not), the turn failing with the guardrail's reason; one that passes lets the
# answer out; an input guardrail that trips fails the turn before any model call.
set -uo pipefail
agentc=$1 httpd=$2
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (guardrails.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 5 "$tmp"/*.err >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
req() {
  curl -s --max-time 10 -o "$tmp/body" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data-binary "$3"} "$url$2"
}
expect() {
  local want=$1; shift
  local got; got=$(req "$@")
  [ "$got" = "$want" ] || fail "$* -> $got, expected $want: $(head -c 300 "$tmp/body")"
}
sse() { curl -s -N --max-time 30 "$url/v1/sessions/$2/events" >"$tmp/$1" & pids+=("$!"); }
frames() { awk '/^event: /{ev=substr($0,8)} /^data: /{print "{\"event\":\"" ev "\",\"data\":" substr($0,7) "}"}' "$1"; }
has_event() { frames "$1" | jq -s -e "any(.[]; $2)" >/dev/null 2>&1; }
requests() { [ -f "$tmp/requests" ] && wc -l <"$tmp/requests" || echo 0; }

"$httpd" --port-file "$tmp/model.port" --mode calc --log "$tmp/requests" 2>"$tmp/model.err" &
pids+=("$!")
wait_for test -s "$tmp/model.port" || fail "the model server did not start"
cat >"$tmp/tools.json" <<'JSON'
{"tools": [{"name": "check_input", "description": "guardrail", "parameters": {"type": "object"},
            "command": ["sh", "-c", "grep -q secret && echo '{\"pass\": false, \"reason\": \"a secret\"}' || echo '{\"pass\": true}'"]},
           {"name": "check_answer", "description": "guardrail", "parameters": {"type": "object"},
            "command": ["sh", "-c", "grep -q 42 && echo '{\"pass\": false, \"reason\": \"the answer\"}' || echo '{\"pass\": true}'"]}]}
JSON
AGENTC_TEST_KEY=sk-test "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/a.port" \
  --base-url "http://127.0.0.1:$(cat "$tmp/model.port")/v1" --model m --api-key-env AGENTC_TEST_KEY \
  --spec examples/specs/guardrails.fsm --tools builtin:calculator --tools "$tmp/tools.json" 2>"$tmp/a.err" &
pids+=("$!")
wait_for test -s "$tmp/a.port" || fail "server did not start"
url="http://127.0.0.1:$(cat "$tmp/a.port")"

# ---- output tripwire: no text frame, the turn fails with the reason ---------------------------
expect 201 POST /v1/sessions '{"id": "g1"}'
sse ev1 g1
expect 202 POST /v1/sessions/g1/messages '{"content": "What is 6 * 7?"}'
wait_for has_event "$tmp/ev1" '.event == "error" and .data.code == "turn_failed"' || fail "no error: $(cat "$tmp/ev1")"
! has_event "$tmp/ev1" '.event == "text"' || fail "a text frame went out: $(cat "$tmp/ev1")"
! grep -q 'The answer is' "$tmp/ev1" || fail "the answer reached the stream: $(cat "$tmp/ev1")"
expect 200 GET /v1/sessions/g1
jq -e '.last_turn.outcome == "failed" and (.last_turn.error | test("guardrail check_answer: the answer"))' \
  "$tmp/body" >/dev/null || fail "g1: $(head -c 400 "$tmp/body")"
# a reconnect's replay of the journal gives the same: no text
curl -s -N --max-time 3 "$url/v1/sessions/g1/events" >"$tmp/ev1b"
! has_event "$tmp/ev1b" '.event == "text"' || fail "a replayed text frame: $(cat "$tmp/ev1b")"

# ---- passing: the answer's text goes out ------------------------------------------------------
expect 201 POST /v1/sessions '{"id": "g2"}'
sse ev2 g2
expect 202 POST /v1/sessions/g2/messages '{"content": "What is 2 + 3?"}'
wait_for has_event "$tmp/ev2" '.event == "turn_done"' || fail "no turn_done: $(cat "$tmp/ev2")"
[ "$(frames "$tmp/ev2" | jq -s -r 'map(select(.event == "text") | .data.delta // .data.text) | join("")')" \
  = "The answer is 5." ] || fail "passing: $(cat "$tmp/ev2")"

# ---- input tripwire: no model request ---------------------------------------------------------
n=$(requests)
expect 201 POST /v1/sessions '{"id": "g3"}'
sse ev3 g3
expect 202 POST /v1/sessions/g3/messages '{"content": "the secret of 6 * 7?"}'
wait_for has_event "$tmp/ev3" '.event == "error" and (.data.message | test("guardrail check_input: a secret"))' \
  || fail "no error: $(cat "$tmp/ev3")"
[ "$(requests)" = "$n" ] || fail "input tripwire: the model was called"

# ---- the OpenAI front: streamed and not, the answer never comes -------------------------------
curl -s -N --max-time 20 -H 'Content-Type: application/json' "$url/v1/chat/completions" \
  --data-binary '{"model": "default", "stream": true, "messages": [{"role": "user", "content": "What is 6 * 7?"}]}' \
  >"$tmp/oa.sse"
grep -q '^data: ' "$tmp/oa.sse" || fail "openai stream: $(head -c 400 "$tmp/oa.sse")"
! grep -q 'The answer is' "$tmp/oa.sse" || fail "openai stream: the answer went out: $(cat "$tmp/oa.sse")"
curl -s --max-time 20 -H 'Content-Type: application/json' "$url/v1/chat/completions" \
  --data-binary '{"model": "default", "messages": [{"role": "user", "content": "What is 6 * 7?"}]}' >"$tmp/oa.json"
! grep -q 'The answer is' "$tmp/oa.json" || fail "openai: the answer went out: $(cat "$tmp/oa.json")"
curl -s --max-time 20 -H 'Content-Type: application/json' "$url/v1/chat/completions" \
  --data-binary '{"model": "default", "messages": [{"role": "user", "content": "What is 2 + 3?"}]}' >"$tmp/oa2.json"
jq -e '.choices[0].message.content == "The answer is 5."' "$tmp/oa2.json" >/dev/null \
  || fail "openai, passing: $(cat "$tmp/oa2.json")"
curl -s -N --max-time 20 -H 'Content-Type: application/json' "$url/v1/chat/completions" \
  --data-binary '{"model": "default", "stream": true, "messages": [{"role": "user", "content": "What is 2 + 3?"}]}' \
  >"$tmp/oa2.sse"
[ "$(sed -n 's/^data: //p' "$tmp/oa2.sse" | grep -v '^\[DONE\]' | jq -s -r 'map(.choices[0].delta.content // "") | join("")')" \
  = "The answer is 5." ] || fail "openai stream, passing: $(cat "$tmp/oa2.sse")"

# ---- a guardrail that is a sub-agent: its child session answers {"pass", "reason"} ------------
cat >"$tmp/agents.json" <<JSON
{"tools": [{"name": "check_answer", "description": "guardrail", "parameters": {"type": "object"},
            "command": ["sh", "-c", "cat >/dev/null; echo '{\\"pass\\": true}'"]}],
 "agents": [{"name": "check_input", "description": "Checks the user's message", "spec": "$PWD/spec/agent.fsm",
             "system": "You are a guardrail: answer {\\"pass\\": bool, \\"reason\\": string}.",
             "tools": []}]}
JSON
AGENTC_TEST_KEY=sk-test "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/b.port" \
  --base-url "http://127.0.0.1:$(cat "$tmp/model.port")/v1" --model m --api-key-env AGENTC_TEST_KEY \
  --spec examples/specs/guardrails.fsm --tools builtin:calculator --tools "$tmp/agents.json" 2>"$tmp/b.err" &
pids+=("$!")
wait_for test -s "$tmp/b.port" || fail "server b did not start"
url="http://127.0.0.1:$(cat "$tmp/b.port")"
n=$(requests)
expect 201 POST /v1/sessions '{"id": "a1"}'
sse eva1 a1
expect 202 POST /v1/sessions/a1/messages '{"content": "the secret of 6 * 7?"}'
wait_for has_event "$tmp/eva1" '.event == "error" and (.data.message | test("guardrail check_input: a secret"))' \
  || fail "the agent guardrail did not trip: $(cat "$tmp/eva1")"
has_event "$tmp/eva1" '.event == "agent_started" and .data.agent == "check_input" and .data.session == "a1.check_input.guardrail_input_m1"' \
  || fail "no agent_started for the guardrail's child: $(grep -A1 agent_ "$tmp/eva1")"
[ "$(tail -n +$((n + 1)) "$tmp/requests" | jq -r '.body.messages[0].content' | grep -vc '^You are a guardrail')" = 0 ] \
  || fail "the agent guardrail tripped after a model call of the session"
expect 200 GET /v1/sessions/a1.check_input.guardrail_input_m1
jq -e '.parent.session == "a1" and .answer == "{\"pass\": false, \"reason\": \"a secret\"}"' "$tmp/body" >/dev/null \
  || fail "the guardrail's child: $(head -c 400 "$tmp/body")"
n=$(requests)
expect 201 POST /v1/sessions '{"id": "a2"}'
sse eva2 a2
expect 202 POST /v1/sessions/a2/messages '{"content": "What is 2 + 3?"}'
wait_for has_event "$tmp/eva2" '.event == "turn_done"' || fail "the agent guardrail did not pass: $(cat "$tmp/eva2")"
expect 200 GET /v1/sessions/a2
jq -e '.answer == "The answer is 5." and .children[0].agent == "check_input" and .children[0].outcome == "completed"' \
  "$tmp/body" >/dev/null || fail "passing agent guardrail: $(head -c 400 "$tmp/body")"
tail -n +$((n + 1)) "$tmp/requests" | jq -e -s 'map(select(.body.messages[0].content | startswith("You are a guardrail") | not))
  | length > 0 and all(.[]; [.body.tools[]?.function.name] | index("agent__check_input") | not)' >/dev/null \
  || fail "the guardrail agent was offered to the model"

# ---- a parallel input guardrail that trips after the answer streamed: the text is retracted ---
sed -e 's|^    guardrail input  check_input$|    guardrail input  check_input parallel|' -e '/guardrail output/d' \
  examples/specs/guardrails.fsm >"$tmp/par.fsm"
cat >"$tmp/par.json" <<'JSON'
{"tools": [{"name": "check_input", "description": "guardrail", "parameters": {"type": "object"},
            "command": ["sh", "-c", "sleep 1; grep -q secret && echo '{\"pass\": false, \"reason\": \"a secret\"}' || echo '{\"pass\": true}'"]}]}
JSON
AGENTC_TEST_KEY=sk-test "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/c.port" \
  --base-url "http://127.0.0.1:$(cat "$tmp/model.port")/v1" --model m --api-key-env AGENTC_TEST_KEY \
  --spec "$tmp/par.fsm" --tools builtin:calculator --tools "$tmp/par.json" 2>"$tmp/c.err" &
pids+=("$!")
wait_for test -s "$tmp/c.port" || fail "server c did not start"
url="http://127.0.0.1:$(cat "$tmp/c.port")"
expect 201 POST /v1/sessions '{"id": "p1"}'
sse evp1 p1
expect 202 POST /v1/sessions/p1/messages '{"content": "the secret of 6 * 7?"}'
wait_for has_event "$tmp/evp1" '.event == "error" and (.data.message | test("guardrail check_input: a secret"))' \
  || fail "the parallel guardrail did not trip: $(cat "$tmp/evp1")"
retracted() { # the text frames, then one discarded frame of all of them
  frames "$1" | jq -s -e '(map(select(.event == "text") | .data.delta) | join("")) as $t |
    ($t | length) > 0 and (map(select(.event == "discarded")) | length == 1 and .[0].data.text == $t and
    .[0].data.reason == "guardrail_tripped") and (map(.event) | index("discarded") > rindex("text"))' >/dev/null
}
retracted "$tmp/evp1" || fail "the streamed text is not retracted: $(frames "$tmp/evp1" | grep -v state_changed)"
curl -s -N --max-time 3 "$url/v1/sessions/p1/events" >"$tmp/evp1b"
retracted "$tmp/evp1b" || fail "a replayed stream does not retract it: $(frames "$tmp/evp1b" | grep -v state_changed)"
echo "serve guardrails: ok"
