#!/usr/bin/env bash
# A stored session outlives a turn that fails or is cancelled, and refuses clearly once it
# ended: a turn the model fails (a 400 from the loopback server) then the next message is
# answered and its request holds the first; a turn over the tool budget then the next one;
# Ctrl-C on a terminal in `run --session` cancels the turn and keeps the session (the next
# request holds the history), two Ctrl-C still exit at once, killing the tool; `sessions close` ends a session
# and a message to it, or to one a failed turn ended (a spec with that terminal state), says
# how and when it ended rather than repeating the old error.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
need script
need pgrep
export AGENTC_DB="$tmp/sessions.db"
show() { "$agentc" sessions show "$@" --json >"$tmp/show" 2>&1 || fail "sessions show $1: $(cat "$tmp/show")"; }

# ---- a model error fails the turn, not the session ---------------------------------------
mkdir -p "$tmp/model"
echo '{"error": {"message": "the model refused (TEST400)", "type": "invalid_request_error"}}' \
  >"$tmp/model/01-400.json"
printf '%s\n\n' 'data: {"choices":[{"index":0,"delta":{"content":"hello again"}}]}' \
  'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}' 'data: [DONE]' >"$tmp/model/02.sse"
start_server --script "$tmp/model"
export AGENTC_TEST_KEY="sk-test-$$"
net=(--base-url "$base" --model m --api-key-env AGENTC_TEST_KEY)
"$agentc" run "${net[@]}" --session f1 "first question" >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] || fail "the failed turn's exit status: $(cat "$tmp/err")"
grep -q "the agent failed: .*TEST400" "$tmp/err" || fail "the failure is not said: $(cat "$tmp/err")"
show f1
jq -e '.status == "idle" and .session.status == "idle" and .session.last_turn.outcome == "failed"
       and (.session.last_turn.error | test("TEST400")) and (.session | has("ended") | not)' "$tmp/show" \
  >/dev/null || fail "after the failed turn: $(cat "$tmp/show")"
"$agentc" run "${net[@]}" --session f1 "second question" >"$tmp/out" 2>"$tmp/err" \
  || fail "the turn after a failed one: exit $?: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = "hello again" ] || fail "the answer after a failed turn: $(cat "$tmp/out")"
! grep -q "TEST400" "$tmp/err" || fail "the old error was said again: $(cat "$tmp/err")"
# the second request held the history: the first question, then the second
[ "$(wc -l <"$tmp/requests")" = 2 ] || fail "requests: $(wc -l <"$tmp/requests")"
tail -n1 "$tmp/requests" | jq -e '[.body.messages[] | select(.role == "user") | .content]
  == ["first question", "second question"]' >/dev/null || fail "the second request: $(tail -n1 "$tmp/requests")"
show f1
jq -e '.session.last_turn == {"outcome": "completed"}' "$tmp/show" >/dev/null || fail "last_turn: $(cat "$tmp/show")"

# ---- a turn over the tool budget fails; the next one runs ----------------------------------
cat >"$tmp/tools.json" <<'JSON'
{"tools": [{"name": "echo", "description": "Echoes", "parameters": {"type": "object"}, "command": ["cat"]}]}
JSON
call() { printf '{"id": "%s", "name": "echo", "arguments": "{}"}' "$1"; }
{
  printf '{"content": "", "tool_calls": [%s, %s]}\n' "$(call c1)" "$(call c2)"
  printf '{"content": "", "tool_calls": [%s, %s]}\n' "$(call c3)" "$(call c4)"
  echo '{"content": "within budget"}'
} >"$tmp/budget.jsonl"
budget=(--spec examples/specs/tool_budget.fsm --provider script --script "$tmp/budget.jsonl" --tools "$tmp/tools.json")
"$agentc" run "${budget[@]}" --session b1 "use many tools" >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] && grep -q "max_tool_calls = 3" "$tmp/err" || fail "the budget turn: $(cat "$tmp/err")"
"$agentc" run "${budget[@]}" --session b1 "now answer" >"$tmp/out" 2>"$tmp/err" \
  || fail "the turn after the budget failure: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = "within budget" ] || fail "answer after the budget failure: $(cat "$tmp/out")"
show b1 --spec examples/specs/tool_budget.fsm
jq -e '[.session.conversation.messages[] | select(.role == "user") | .content] == ["use many tools", "now answer"]
       and .session.last_turn.outcome == "completed"' "$tmp/show" >/dev/null || fail "b1: $(cat "$tmp/show")"

# ---- Ctrl-C on a terminal: the turn is cancelled, the session kept -------------------------
# a second loopback model that answers after 2 s: Ctrl-C comes while the turn waits for it
mkdir -p "$tmp/slowmodel"
printf '%s\n\n' 'data: {"choices":[{"index":0,"delta":{"content":"after the cancel"}}]}' \
  'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}' 'data: [DONE]' >"$tmp/slowmodel/01.sse"
"$httpd" --port-file "$tmp/port2" --script "$tmp/slowmodel" --latency 2000 --log "$tmp/slowreq" &
slow_pid=$!
trap 'kill "$slow_pid" 2>/dev/null; cleanup' EXIT
wait_for test -s "$tmp/port2" || fail "the second server did not start"
slow=(--base-url "http://127.0.0.1:$(cat "$tmp/port2")/v1" --model m --api-key-env AGENTC_TEST_KEY)
requests() { [ -s "$tmp/slowreq" ] && wc -l <"$tmp/slowreq" || echo 0; }
# on_pty OUT KEYS READY ARGS...: agentc run ARGS on a pseudo-terminal; once the command READY
# succeeds, KEYS (printf format) are typed on it. The exit status is agentc's.
on_pty() {
  local out=$1 keys=$2 ready=$3; shift 3
  printf 'exec ' >"$tmp/cmd.sh"
  printf '%q ' "$agentc" run "$@" >>"$tmp/cmd.sh"
  { wait_for eval "$ready"; printf "$keys"; sleep 3; } |
    NO_COLOR=1 SHELL=/bin/sh timeout 30 script -qec "sh $tmp/cmd.sh" /dev/null >"$out" 2>&1
}
on_pty "$tmp/tty" '\003' '[ "$(requests)" = 1 ]' "${slow[@]}" --session c1 "tell me a long story"; rc=$?
[ $rc = 130 ] || fail "Ctrl-C on run --session: exit $rc: $(cat "$tmp/tty")"
grep -q "interrupted: turn cancelled; session c1 kept" "$tmp/tty" || fail "the notice: $(cat "$tmp/tty")"
! grep -q "after the cancel" "$tmp/tty" || fail "the turn was not stopped: $(cat "$tmp/tty")"
show c1
jq -e '.status == "idle" and .session.last_turn.outcome == "cancelled" and (.session | has("ended") | not)' \
  "$tmp/show" >/dev/null || fail "after Ctrl-C: $(cat "$tmp/show")"
"$agentc" run "${slow[@]}" --session c1 "go on" >"$tmp/out" 2>"$tmp/err" \
  || fail "the turn after Ctrl-C: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = "after the cancel" ] || fail "answer after Ctrl-C: $(cat "$tmp/out")"
tail -n1 "$tmp/slowreq" | jq -e '[.body.messages[] | select(.role == "user") | .content]
  == ["tell me a long story", "go on"]' >/dev/null || fail "the request after Ctrl-C: $(tail -n1 "$tmp/slowreq")"
# two Ctrl-C in a row: out at once, no tool process left behind
marker="30.0$$"
cat >"$tmp/sleeper.json" <<JSON
{"tools": [{"name": "sleeper", "description": "Sleeps", "parameters": {"type": "object"},
            "command": ["sleep", "$marker"]}]}
JSON
{
  echo '{"content": "", "tool_calls": [{"id": "s1", "name": "sleeper", "arguments": "{}"}]}'
  echo '{"content": "never"}'
} >"$tmp/sleep.jsonl"
on_pty "$tmp/tty2" '\003\003' 'pgrep -f "sleep $marker" >/dev/null' --provider script --script "$tmp/sleep.jsonl" \
  --tools "$tmp/sleeper.json" --session c2 "sleep"; rc=$?
[ $rc = 130 ] || fail "two Ctrl-C: exit $rc: $(cat "$tmp/tty2")"
no_sleeper() { ! pgrep -f "sleep $marker" >/dev/null; }
wait_for no_sleeper || fail "a tool process outlived two Ctrl-C"

# ---- a closed session, and one a failed turn ended, refuse clearly -------------------------
"$agentc" sessions close c1 >"$tmp/out" 2>"$tmp/err" || fail "sessions close: $(cat "$tmp/err")"
grep -q "session c1 closed" "$tmp/out" || fail "close: $(cat "$tmp/out")"
show c1
jq -e '.status == "ended" and .session.ended.how == "closed" and .session.states == [["session", "Closed"]]' \
  "$tmp/show" >/dev/null || fail "after close: $(cat "$tmp/show")"
"$agentc" run "${slow[@]}" --session c1 "are you there" >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] || fail "a message to a closed session was taken: $(cat "$tmp/out" "$tmp/err")"
[ "$(requests)" = 2 ] || fail "a closed session asked the model"
grep -qE "^agentc: session c1 ended \(closed\) at 20[0-9-]+T[0-9:]+Z; start a new one$" "$tmp/err" \
  || fail "the refusal: $(cat "$tmp/err")"
"$agentc" sessions close c1 2>"$tmp/err" || fail "closing again: $(cat "$tmp/err")"
grep -q "ended (closed)" "$tmp/err" || fail "closing again: $(cat "$tmp/err")"
"$agentc" sessions close nosuch 2>/dev/null && fail "closing an unknown session succeeded"
echo '{"error": {"status": 400, "message": "bad request here", "retryable": false}}' >"$tmp/bad.jsonl"
dead=(--spec examples/specs/end_on_failure.fsm --provider script --script "$tmp/bad.jsonl")
"$agentc" run "${dead[@]}" --session d1 "hi" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "the agent failed: bad request here" "$tmp/err" || fail "d1's failure: $(cat "$tmp/err")"
"$agentc" run "${dead[@]}" --session d1 "hello again" >/dev/null 2>"$tmp/err"
[ $? = 1 ] || fail "a message to a session that ended was taken"
grep -qE "^agentc: session d1 ended \(failed: bad request here\) at .*; start a new one$" "$tmp/err" \
  && ! grep -q "the agent failed" "$tmp/err" || fail "the refusal of d1: $(cat "$tmp/err")"
echo "ok"
