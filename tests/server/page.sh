#!/usr/bin/env bash
# The audit page in headless Debian chromium (tests/server/page_client.mjs): a message is
# sent, the answer streams in, the highlighted states change; a retried call's partial answer
# and one an interrupting message stopped leave the view (only the answers are shown); a
# screenshot is kept in ARTIFACTS/audit-page.png; a session waiting for approval takes
# per-call decisions on the page (each call shown once, its result after a reload);
# sub-agents' child sessions are shown under their calls. At 1400x900: the if_busy default is
# the API's, a picked machine is drawn whole, self-loops are listed inside their states, the
# session list follows the session's status.
set -uo pipefail
agentc=$1 artifacts=$2
dir=$(cd "$(dirname "$0")" && pwd)
command -v chromium >/dev/null || { echo "SKIP: chromium not installed"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node not installed"; exit 77; }
mkdir -p "$artifacts"
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL (page.sh): $*" >&2; cat "$tmp/err" >&2; exit 1; }
answer="Once upon a time a small agent streamed its answer to a page that watched every state it went through."
jq -cn --arg a "$answer" '{content: $a, reasoning: "thinking about stories"}' >"$tmp/script"
# the second turn: a call streams HALF-ANSWER and fails (503, retried), then FULL ANSWER
echo '{"error": {"status": 503, "message": "unavailable", "retryable": true, "partial": "HALF-ANSWER "}}' >>"$tmp/script"
echo '{"content": "FULL ANSWER"}' >>"$tmp/script"
# the third turn streams a long answer that a message sent with if_busy interrupt stops; the
# turn goes on with it
jq -cn --arg t "$(printf 'lw%d ' $(seq 1 150))" '{content: $t}' >>"$tmp/script"
echo '{"content": "AFTER INTERRUPT"}' >>"$tmp/script"
# the fourth turn streams a long answer the Cancel button stops; the fifth answers after it
jq -cn --arg t "$(printf 'cw%d ' $(seq 1 150))" '{content: $t}' >>"$tmp/script"
echo '{"content": "AFTER CANCEL"}' >>"$tmp/script"
echo "tok-page-test-0123456789abcdef page" >"$tmp/tokens"
"$agentc" serve --provider script --script "$tmp/script" --script-delay-ms 40 --tokens "$tmp/tokens" --param backoff_initial=600ms \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || fail "the server did not start"
timeout 90 node --experimental-websocket --no-warnings "$dir/page_client.mjs" "http://127.0.0.1:$(cat "$tmp/port")" \
  tok-page-test-0123456789abcdef "$answer" "$artifacts/audit-page.png" || fail "the page test failed"
[ -s "$artifacts/audit-page.png" ] || fail "no screenshot"
kill -TERM $pid; wait $pid || fail "exit status"
pid=
# a server of two agents: a session of the one whose spec renames the session machine
# (examples/specs/renamed_states.fsm) is drawn with that spec
cat >"$tmp/agents.json" <<JSON
{"agents": [{"name": "plain", "provider": "script", "script": "$tmp/script"},
            {"name": "renamed", "provider": "script", "script": "$tmp/script",
             "spec": "$PWD/examples/specs/renamed_states.fsm"}]}
JSON
rm -f "$tmp/port"
"$agentc" serve --agents "$tmp/agents.json" --tokens "$tmp/tokens" --listen 127.0.0.1:0 \
  --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || fail "the agents server did not start"
curl -s --max-time 10 -H "Authorization: Bearer tok-page-test-0123456789abcdef" -H "Content-Type: application/json" \
  -d '{"id": "r1", "agent": "renamed"}' "http://127.0.0.1:$(cat "$tmp/port")/v1/sessions" | grep -q '"agent":"renamed"' \
  || fail "the renamed agent's session"
AGENT_SESSION=r1 timeout 90 node --experimental-websocket --no-warnings "$dir/page_client.mjs" \
  "http://127.0.0.1:$(cat "$tmp/port")" tok-page-test-0123456789abcdef "" "" || fail "the page test (agents) failed"
kill -TERM $pid; wait $pid || fail "exit status (agents)"
pid=
# sub-agents (docs/composition.md): two calls of agent::math, each child session shown under
# its call with how its turn ended
printf '{"tool_calls": [%s, %s]}\n{"content": "done"}\n' \
  '{"id": "s1", "name": "agent__math", "arguments": "{\"task\": \"one\"}"}' \
  '{"id": "s2", "name": "agent__math", "arguments": "{\"task\": \"two\"}"}' >"$tmp/subs"
echo '{"agents": [{"name": "math", "description": "Does arithmetic", "max_depth": 1}]}' >"$tmp/subs.json"
rm -f "$tmp/port"
"$agentc" serve --provider script --script "$tmp/subs" --tools "$tmp/subs.json" --tokens "$tmp/tokens" \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || fail "the sub-agents server did not start"
SUBAGENTS=1 timeout 90 node --experimental-websocket --no-warnings "$dir/page_client.mjs" \
  "http://127.0.0.1:$(cat "$tmp/port")" tok-page-test-0123456789abcdef "" "" || fail "the page test (sub-agents) failed"
kill -TERM $pid; wait $pid || fail "exit status (sub-agents)"
pid=
# a spec that asks before tools run (examples/specs/approve_tools.fsm): three pending calls
# decided one by one on the page (approve, deny with a reason, edit; an edit the schema
# refuses shown first)
calc() { printf '{"id": "%s", "name": "calculator", "arguments": "{\\"expression\\": \\"%s\\"}"}' "$1" "$2"; }
printf '{"tool_calls": [%s, %s, %s]}\n{"content": "done"}\n' "$(calc c1 1+1)" "$(calc c2 2+2)" \
  "$(calc c3 3+3)" >"$tmp/calls"
rm -f "$tmp/port"
"$agentc" serve --spec examples/specs/approve_tools.fsm --provider script --script "$tmp/calls" \
  --tools builtin:calculator --tokens "$tmp/tokens" --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || fail "the approvals server did not start"
DECISIONS=1 timeout 90 node --experimental-websocket --no-warnings "$dir/page_client.mjs" \
  "http://127.0.0.1:$(cat "$tmp/port")" tok-page-test-0123456789abcdef "" "" || fail "the page test (decisions) failed"
kill -TERM $pid; wait $pid || fail "exit status (decisions)"
pid=
