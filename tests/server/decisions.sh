#!/usr/bin/env bash
# agentc serve with examples/specs/approve_tools.fsm (`outside event approve(decisions)`):
# the waiting session lists its pending calls; POST .../events/approve with per-call decisions
# that do not fit (an unknown call id, a bad shape, an edit the tool's schema refuses) answers
# 400 with the reason and changes nothing; then one call approved, one denied with a reason and
# one edited run as decided (the conversation keeps the model's arguments, the edited call's
# result says so), also after a restart rebuilt the waiting session from the store; the stored
# journal replays with --check.
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL (decisions.sh:${BASH_LINENO[0]}): $*" >&2; cat "$tmp/err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
calc() { printf '{"id": "%s", "name": "calculator", "arguments": "{\\"expression\\": \\"%s\\"}"}' "$1" "$2"; }
printf '{"tool_calls": [%s, %s, %s]}\n{"content": "done"}\n' "$(calc c1 1+1)" "$(calc c2 2+2)" \
  "$(calc c3 3+3)" >"$tmp/script"
start() {
  rm -f "$tmp/port"
  "$agentc" serve --spec examples/specs/approve_tools.fsm --provider script --script "$tmp/script" \
    --tools builtin:calculator --db "$tmp/db" --listen 127.0.0.1:0 --port-file "$tmp/port" 2>>"$tmp/err" &
  pid=$!
  wait_for test -s "$tmp/port" || fail "the server did not start"
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
start
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
waiting() { j "$url/v1/sessions/d" | jq -e '.waiting.state == "AWAITING_APPROVAL"' >/dev/null; }
idle() { j "$url/v1/sessions/d" | jq -e '.states.session == "Idle"' >/dev/null; }
approve() { j -o "$tmp/body" -w '%{http_code}' -X POST -d "$1" "$url/v1/sessions/d/events/approve"; }

j -X POST -d '{"id": "d"}' "$url/v1/sessions" >/dev/null
j -X POST -d '{"content": "three sums"}' "$url/v1/sessions/d/messages" >/dev/null
wait_for waiting || fail "not waiting for approval: $(j "$url/v1/sessions/d")"
# a restart rebuilds the waiting session from the store: the decisions go to it as before
kill -TERM "$pid"; wait "$pid" || fail "exit status"
start
waiting || fail "not waiting after a restart: $(j "$url/v1/sessions/d")"
j "$url/v1/sessions/d" | jq -e '[.waiting.calls[] | [.id, .name, (.arguments | fromjson | .expression)]]
  == [["c1", "calculator", "1+1"], ["c2", "calculator", "2+2"], ["c3", "calculator", "3+3"]]' >/dev/null \
  || fail "the pending calls are not listed: $(j "$url/v1/sessions/d")"

# decisions that do not fit: 400 with the reason, nothing applied, still waiting
bad() { # bad BODY TEXT
  local code
  code=$(approve "$1")
  [ "$code" = 400 ] || fail "$1: $code $(cat "$tmp/body")"
  jq -e --arg t "$2" '.error.code == "invalid_decisions" and (.error.message | contains($t))' "$tmp/body" >/dev/null \
    || fail "$1: $(cat "$tmp/body")"
  waiting || fail "$1 moved the session"
}
bad '{"calls": {"c9": "approve"}}' "call 'c9' is not pending (pending: c1, c2, c3)"
bad '{"calls": {"c1": "yes"}}' "call 'c1': a decision is"
bad '{"calls": ["c1"]}' 'the decisions are {"calls"'
bad '{"calls": {"c3": {"arguments": {"expression": 7}}}}' \
  "call 'c3': the edited arguments do not fit the schema of calculator"
bad '{"calls": {"c3": {"arguments": {}}}}' "the edited arguments do not fit the schema of calculator"
j "$url/v1/sessions/d" | jq -e '[.tool_calls[] | select(has("result"))] == []' >/dev/null \
  || fail "a refused decision answered a call"

code=$(approve '{"calls": {"c1": "approve", "c2": {"deny": "not needed"}, "c3": {"arguments": {"expression": "6*7"}}}}')
[ "$code" = 202 ] || fail "approve: $code $(cat "$tmp/body")"
wait_for idle || fail "the turn did not finish: $(j "$url/v1/sessions/d")"
j "$url/v1/sessions/d" >"$tmp/s.json"
res() { jq -r --arg id "$1" '.tool_calls[] | select(.id == $id) | .result' "$tmp/s.json"; }
[ "$(res c1)" = 2 ] || fail "approved: $(res c1)"
[ "$(res c2)" = "denied by the user: not needed" ] || fail "denied: $(res c2)"
[ "$(res c3)" = "$(printf 'arguments edited by the user: {"expression":"6*7"}\n42')" ] || fail "edited: $(res c3)"
jq -e '.answer == "done"' "$tmp/s.json" >/dev/null || fail "answer: $(cat "$tmp/s.json")"
jq -e '[.tool_calls[] | select(.id == "c3") | .arguments | fromjson | .expression] == ["3+3"]' "$tmp/s.json" >/dev/null || fail "the model's arguments were not kept: $(cat "$tmp/s.json")"
kill -TERM "$pid"; wait "$pid" || fail "exit status"
pid=

# the stored journal (a restart in the middle) replays with the same transitions: the denial is applied again from the
# journaled decisions (else c2 stays pending after c1's and c3's results and the rule leaving
# TOOL_EXECUTING on the last result does not match)
"$agentc" sessions export local/d --db "$tmp/db" -o "$tmp/d.jsonl" >/dev/null 2>"$tmp/err" || fail "export"
grep -q '"ev":"approve".*"c2":{"deny":"not needed"}' "$tmp/d.jsonl" || fail "the decisions are not journaled"
"$agentc" replay "$tmp/d.jsonl" --check --spec examples/specs/approve_tools.fsm >"$tmp/check" 2>&1 \
  || fail "replay --check: $(cat "$tmp/check")"
grep -q "every transition matches" "$tmp/check" || fail "replay --check: $(cat "$tmp/check")"
echo "decisions: all checks passed"
