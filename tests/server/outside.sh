#!/usr/bin/env bash
# agentc serve with a spec that waits for the user (examples/specs/approve_tools.fsm): the
# session names the outside events it waits for, POST .../events/approve runs the tool call,
# .../events/deny answers it "denied by the user"; an event the state does not take changes
# nothing and the server stays up.
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL (outside.sh:${BASH_LINENO[0]}): $*" >&2; cat "$tmp/err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
cat >"$tmp/script" <<'JSONL'
{"tool_calls": [{"id": "c1", "name": "calculator", "arguments": "{\"expression\": \"6*7\"}"}]}
{"content": "the answer is 42"}
JSONL
"$agentc" serve --spec examples/specs/approve_tools.fsm --provider script --script "$tmp/script" \
  --tools builtin:calculator --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
wait_for test -s "$tmp/port" || fail "the server did not start"
url="http://127.0.0.1:$(cat "$tmp/port")"
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
waiting() { j "$url/v1/sessions/$1" | jq -e '.waiting.state == "AWAITING_APPROVAL" and (.waiting.events | sort) == ["approve", "deny"]' >/dev/null; }
idle() { j "$url/v1/sessions/$1" | jq -e '.states.session == "Idle"' >/dev/null; }

for verdict in approve deny; do
  j -X POST -d "{\"id\": \"$verdict\"}" "$url/v1/sessions" >/dev/null
  j -X POST -d '{"content": "what is 6*7?"}' "$url/v1/sessions/$verdict/messages" >/dev/null
  wait_for waiting "$verdict" || fail "$verdict: not waiting for approval: $(j "$url/v1/sessions/$verdict")"
  code=$(j -o "$tmp/body" -w '%{http_code}' -X POST "$url/v1/sessions/$verdict/events/$verdict")
  [ "$code" = 202 ] || fail "$verdict: $code $(cat "$tmp/body")"
  wait_for idle "$verdict" || fail "$verdict: the turn did not finish"
  j "$url/v1/sessions/$verdict" >"$tmp/s.json"
  jq -e '.answer == "the answer is 42" and (.waiting | not)' "$tmp/s.json" >/dev/null || fail "$verdict: $(cat "$tmp/s.json")"
  tool=$(jq -r '.tool_calls[0].result' "$tmp/s.json")
  jq -e '[.messages[] | select(.role == "tool" and .tool_call_id == "c1")] | length == 1' "$tmp/s.json" >/dev/null || fail "$verdict: the call has no tool message"
  if [ "$verdict" = approve ]; then [ "$tool" = 42 ] || fail "approved tool result: $tool"
  else [ "$tool" = "denied by the user" ] || fail "denied tool result: $tool"; fi
done
# an outside event nothing waits for is refused, saying what the session waits for
code=$(j -o "$tmp/body" -w '%{http_code}' -X POST "$url/v1/sessions/approve/events/approve")
[ "$code" = 409 ] || fail "stray approve: $code $(cat "$tmp/body")"
jq -e '.error.code == "not_waiting" and (.error.message | test("nothing waits for event .approve.: the session is in Idle and waits for no outside event"))' \
  "$tmp/body" >/dev/null || fail "stray approve: $(cat "$tmp/body")"
idle approve || fail "a stray approve moved the session"
# a 202 shows the state after the action: a new session is Idle, a message's turn runs
j -X POST -d '{"id": "after"}' "$url/v1/sessions" | jq -e '.states.session == "Idle"' >/dev/null \
  || fail "created: not Idle"
j -X POST -d '{"content": "what is 6*7?"}' "$url/v1/sessions/after/messages" >"$tmp/body"
jq -e '.accepted == "started" and .status == "running" and .states.session == "Running"' "$tmp/body" >/dev/null \
  || fail "message: not the state after it: $(cat "$tmp/body")"
wait_for waiting after || fail "after: not waiting for approval"
j -X POST "$url/v1/sessions/after/events/approve" >"$tmp/body"
jq -e '.accepted == "approve" and (.waiting | not)' "$tmp/body" >/dev/null \
  || fail "approve: not the state after it: $(cat "$tmp/body")"
kill -TERM "$pid"; wait "$pid" || fail "exit status"
pid=
echo "outside: all checks passed"
