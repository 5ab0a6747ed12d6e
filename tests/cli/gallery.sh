#!/usr/bin/env bash
# gallery.sh AGENTC: every spec of examples/specs/ run through
# `agentc run --spec FILE --provider script`, its outcome checked (exit status,
# message, answer, journal), and every journal replayed with --check and twice
# to the same bytes. Run from the source root.
agentc="$1"
source "$(dirname "$0")/lib.sh"
g=examples/specs
cd "$(dirname "$0")/../.." || exit 1

cat >"$tmp/tools.json" <<'JSON'
{"tools": [{"name": "echo", "description": "Echoes", "parameters": {"type": "object"}, "command": ["cat"]},
           {"name": "shell_run", "description": "Runs", "parameters": {"type": "object"}, "command": ["cat"]},
           {"name": "slow", "description": "Sleeps", "parameters": {"type": "object"}, "command": ["sh", "-c", "sleep 20; echo late"]}]}
JSON
call() { printf '{"id": "%s", "name": "%s", "arguments": "{}"}' "$1" "$2"; }
two_rounds() { # two turns of two echo calls each, then an answer
  printf '{"content": "", "tool_calls": [%s, %s]}\n' "$(call c1 echo)" "$(call c2 echo)"
  printf '{"content": "", "tool_calls": [%s, %s]}\n' "$(call c3 echo)" "$(call c4 echo)"
  echo '{"content": "done"}'
}
two_rounds >"$tmp/two.jsonl"

run() { # run NAME SPEC ARGS...: stdout, stderr and the exit status in $tmp/NAME.*
  local name=$1 spec=$2
  shift 2
  "$agentc" run --spec "$g/$spec" --provider script --journal "$tmp/$name.journal" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null
  echo $? >"$tmp/$name.rc"
}
rc() { cat "$tmp/$1.rc"; }
replays() { # replays NAME SPEC: --check passes, and two replays print the same bytes
  "$agentc" replay "$tmp/$1.journal" --check --spec "$g/$2" >"$tmp/$1.check" 2>&1 \
    || fail "$1: the journal does not replay: $(tail -3 "$tmp/$1.check")"
  grep -q "every transition matches" "$tmp/$1.check" || fail "$1: $(cat "$tmp/$1.check")"
  "$agentc" replay "$tmp/$1.journal" --spec "$g/$2" >"$tmp/$1.r1" 2>&1
  "$agentc" replay "$tmp/$1.journal" --spec "$g/$2" >"$tmp/$1.r2" 2>&1
  cmp -s "$tmp/$1.r1" "$tmp/$1.r2" || fail "$1: two replays differ"
}
tools_run() { grep -c '"ev":"tool.completed"' "$tmp/$1.journal"; }

# every gallery spec checks clean and differs from the shipped one
for f in "$g"/*.fsm; do
  "$agentc" check "$f" >"$tmp/check.out" 2>&1 || fail "$f does not check: $(cat "$tmp/check.out")"
  grep -q ", 0 warnings" "$tmp/check.out" || fail "$f has warnings: $(cat "$tmp/check.out")"
  cmp -s "$f" spec/agent.fsm && fail "$f is the shipped spec"
done

# ---- tool_budget: the second round would make 4 calls (> 3): fails, naming the budget ----------
run budget tool_budget.fsm --script "$tmp/two.jsonl" --tools "$tmp/tools.json" hi
[ "$(rc budget)" = 1 ] || fail "tool_budget: exit $(rc budget), expected 1"
grep -q "tool-call budget (max_tool_calls = 3)" "$tmp/budget.err" || fail "tool_budget: $(cat "$tmp/budget.err")"
[ "$(tools_run budget)" = 2 ] || fail "tool_budget: $(tools_run budget) tools ran, expected 2"
replays budget tool_budget.fsm
grep -q "error    the turn would exceed its tool-call budget (max_tool_calls = 3)" "$tmp/budget.r1" \
  || fail "tool_budget: the replay does not give the reason: $(cat "$tmp/budget.r1")"
# a budget of 4 lets the whole turn run
run budget4 tool_budget.fsm --script "$tmp/two.jsonl" --tools "$tmp/tools.json" --param max_tool_calls=4 hi
[ "$(rc budget4)" = 0 ] || fail "tool_budget with 4: exit $(rc budget4): $(cat "$tmp/budget4.err")"
grep -q done "$tmp/budget4.out" || fail "tool_budget with 4: no answer"
# --jsonl: the reason is done.error
"$agentc" run --spec "$g/tool_budget.fsm" --provider script --script "$tmp/two.jsonl" \
  --tools "$tmp/tools.json" --jsonl hi >"$tmp/budget.jsonl" 2>/dev/null </dev/null
tail -n1 "$tmp/budget.jsonl" | jq -e '.type == "done" and .status == "failed" and (.error | test("max_tool_calls = 3"))' \
  >/dev/null || fail "tool_budget --jsonl: $(tail -n1 "$tmp/budget.jsonl")"

# ---- turn_timeout: a tool sleeping past the timeout fails the turn, saying so -------------------
printf '{"content": "", "tool_calls": [%s]}\n{"content": "late"}\n' "$(call s1 slow)" >"$tmp/slow.jsonl"
start=$(date +%s)
run timeout turn_timeout.fsm --script "$tmp/slow.jsonl" --tools "$tmp/tools.json" --param turn_timeout=300ms hi
[ $(( $(date +%s) - start )) -lt 10 ] || fail "turn_timeout: the turn was not cut short"
[ "$(rc timeout)" = 1 ] || fail "turn_timeout: exit $(rc timeout)"
grep -q "the turn ran longer than turn_timeout (300ms)" "$tmp/timeout.err" || fail "turn_timeout: $(cat "$tmp/timeout.err")"
grep -q '"ev":"after(turn_timeout)@session.Running"' "$tmp/timeout.journal" || fail "turn_timeout: the timer is not journaled"
replays timeout turn_timeout.fsm
grep -q "session  Idle" "$tmp/timeout.r1" && grep -q "turn     failed" "$tmp/timeout.r1" \
  || fail "turn_timeout: the session is not at rest after the timeout: $(cat "$tmp/timeout.r1")"
# the same rule with fail() alone (no record_failure): the turn ends when the session leaves
# Running, with fail()'s text as its reason; nothing waits for the inactivity timeout
sed 's|^\(    Running -> Idle *after turn_timeout / fail(.*)\), record_failure$|\1|' \
  "$g/turn_timeout.fsm" >"$tmp/failonly.fsm"
grep -q 'after turn_timeout / fail(".*")$' "$tmp/failonly.fsm" || fail "the fail-only edit did not take"
start=$(date +%s)
"$agentc" run --no-store --spec "$tmp/failonly.fsm" --provider script --script "$tmp/slow.jsonl" \
  --tools "$tmp/tools.json" --param turn_timeout=300ms --jsonl hi >"$tmp/failonly.out" \
  2>"$tmp/failonly.err" </dev/null
echo $? >"$tmp/failonly.rc"
[ $(( $(date +%s) - start )) -lt 10 ] || fail "fail() alone: the turn did not end at its timeout"
[ "$(rc failonly)" = 1 ] || fail "fail() alone: exit $(rc failonly): $(cat "$tmp/failonly.err")"
tail -n1 "$tmp/failonly.out" | jq -e '.type == "done" and .status == "failed" and
  .error == "the turn ran longer than turn_timeout (300ms)"' >/dev/null \
  || fail "fail() alone: $(tail -n1 "$tmp/failonly.out")"
# a turn within the limit completes
# --jsonl: the call the timeout cut short gets its (failed) result, saying why
run timeoutj turn_timeout.fsm --script "$tmp/slow.jsonl" --tools "$tmp/tools.json" --param turn_timeout=300ms --jsonl hi
jq -s -e 'map(select(.type == "tool_call" or .type == "tool_result") | [.type, .ok, .content])
    == [["tool_call", null, null], ["tool_result", false, "no result: the turn ended first (the turn ran longer than turn_timeout (300ms))"]]' \
  "$tmp/timeoutj.out" >/dev/null || fail "turn_timeout --jsonl: a call without its result: $(cat "$tmp/timeoutj.out")"
run intime turn_timeout.fsm --script "$tmp/two.jsonl" --tools "$tmp/tools.json" hi
[ "$(rc intime)" = 0 ] || fail "turn_timeout, quick turn: exit $(rc intime): $(cat "$tmp/intime.err")"

# ---- approve_tools: outside events approve / deny ------------------------------------------------
start=$(date +%s)
run wait approve_tools.fsm --script "$tmp/two.jsonl" --tools "$tmp/tools.json" hi
[ $(( $(date +%s) - start )) -le 2 ] || fail "approve_tools without an answer took too long"
[ "$(rc wait)" = 1 ] || fail "approve_tools without an answer: exit $(rc wait)"
grep -q "waits in state AWAITING_APPROVAL for approve or deny" "$tmp/wait.err" || fail "approve_tools: $(cat "$tmp/wait.err")"
[ "$(tools_run wait)" = 0 ] || fail "approve_tools: a tool ran unapproved"
run approve approve_tools.fsm --script "$tmp/two.jsonl" --tools "$tmp/tools.json" --on AWAITING_APPROVAL=approve hi
[ "$(rc approve)" = 0 ] || fail "approve: exit $(rc approve): $(cat "$tmp/approve.err")"
[ "$(tools_run approve)" = 4 ] || fail "approve: $(tools_run approve) tools ran, expected 4"
[ "$(grep -c '"ev":"approve"' "$tmp/approve.journal")" = 2 ] || fail "approve: the answers are not journaled"
replays approve approve_tools.fsm
run deny approve_tools.fsm --script "$tmp/two.jsonl" --tools "$tmp/tools.json" --jsonl \
  --on AWAITING_APPROVAL=approve --on AWAITING_APPROVAL=deny hi
[ "$(rc deny)" = 0 ] || fail "deny: exit $(rc deny): $(cat "$tmp/deny.err")"
[ "$(tools_run deny)" = 2 ] || fail "deny: $(tools_run deny) tools ran, expected 2 (approved, then denied)"
[ "$(jq -c 'select(.type == "tool_result" and .ok == false and .content == "denied by the user")' "$tmp/deny.out" | wc -l)" = 2 ] \
  || fail "deny: the model is not told: $(cat "$tmp/deny.out")"
tail -n1 "$tmp/deny.out" | jq -e '.status == "completed" and .answer == "done"' >/dev/null || fail "deny: the turn did not go on"
jq -s -e 'reduce .[] as $l ({ok: true, seen: {}};
    if $l.type == "tool_call" then .seen[$l.id] = true
    elif $l.type == "tool_result" then .ok = (.ok and (.seen[$l.id] // false)) else . end) | .ok' \
  "$tmp/deny.out" >/dev/null || fail "deny: a tool_result without its tool_call: $(cat "$tmp/deny.out")"
replays deny approve_tools.fsm
run badon approve_tools.fsm --script "$tmp/two.jsonl" --tools "$tmp/tools.json" --on AWAITING_APPROVAL=maybe hi
[ "$(rc badon)" = 1 ] && grep -q "not 'maybe'" "$tmp/badon.err" || fail "--on with a wrong event: $(cat "$tmp/badon.err")"

# on a terminal each pending call is shown and its decision asked for (a wrong answer asks again;
# tests/cli/decisions.sh has the rest)
  printf '{"content": "", "tool_calls": [%s]}\n{"content": "done"}\n' "$(call c1 echo)" >"$tmp/one.jsonl"
if command -v script >/dev/null; then
  printf '%q ' "$agentc" run --spec "$g/approve_tools.fsm" --provider script --script "$tmp/one.jsonl" \
    --tools "$tmp/tools.json" hi >"$tmp/tty.sh"
  { printf 'maybe\rdeny\r\r'; sleep 3; } | NO_COLOR=1 SHELL=/bin/sh timeout 20 script -qec "sh $tmp/tty.sh" /dev/null \
    >"$tmp/tty.out" 2>&1 || fail "on a terminal: $(cat "$tmp/tty.out")"
  grep -q "tool call 1 of 1 (c1): echo {}" "$tmp/tty.out" \
    || fail "on a terminal the pending call is not shown: $(cat "$tmp/tty.out")"
  grep -q "'maybe' is not one of them" "$tmp/tty.out" || fail "a wrong answer not refused: $(cat "$tmp/tty.out")"
  grep -q "denied by the user" "$tmp/tty.out" && grep -q "^done" "$tmp/tty.out" \
    || fail "on a terminal, deny: $(cat "$tmp/tty.out")"
fi
# a state left only on events nothing sends there: the run fails at once, naming it
sed -e 's/AWAITING_APPROVAL -> TOOL_EXECUTING on approve \/ apply_decisions/AWAITING_APPROVAL -> TOOL_EXECUTING on timer.fired/' \
    -e 's/AWAITING_APPROVAL -> SUCCESS on deny/AWAITING_APPROVAL -> SUCCESS on compaction.done/' \
    "$g/approve_tools.fsm" >"$tmp/stuck.fsm"
start=$(date +%s)
"$agentc" run --spec "$tmp/stuck.fsm" --provider script --script "$tmp/one.jsonl" --tools "$tmp/tools.json" \
  --jsonl hi >"$tmp/stuck.out" 2>"$tmp/stuck.err" </dev/null && fail "a stuck session exited 0"
[ $(( $(date +%s) - start )) -le 2 ] || fail "the stuck session was not failed at once"
tail -n1 "$tmp/stuck.out" | jq -e '.status == "failed" and (.error | test("stuck in state process.AWAITING_APPROVAL"))' >/dev/null \
  || fail "stuck: $(cat "$tmp/stuck.out" "$tmp/stuck.err")"

# agentc batch: a waiting session fails naming its state, or takes the first --on answer
printf '{"id":"a","prompt":"hi"}\n{"id":"b","prompt":"ho"}\n' >"$tmp/batch.jsonl"
"$agentc" batch --spec "$g/approve_tools.fsm" --provider script --script "$tmp/one.jsonl" \
  --tools "$tmp/tools.json" "$tmp/batch.jsonl" >"$tmp/batch.out" 2>&1 </dev/null && fail "batch: exit 0 without answers"
[ "$(jq -c 'select(.status == "failed" and (.error | test("waits in state AWAITING_APPROVAL")))' "$tmp/batch.out" | wc -l)" = 2 ] \
  || fail "batch without --on: $(cat "$tmp/batch.out")"
"$agentc" batch --spec "$g/approve_tools.fsm" --provider script --script "$tmp/one.jsonl" \
  --tools "$tmp/tools.json" --on AWAITING_APPROVAL=approve "$tmp/batch.jsonl" >"$tmp/batch2.out" 2>&1 </dev/null \
  || fail "batch with --on: $(cat "$tmp/batch2.out")"
[ "$(jq -c 'select(.status == "completed" and .answer == "done")' "$tmp/batch2.out" | wc -l)" = 2 ] \
  || fail "batch with --on: $(cat "$tmp/batch2.out")"

# ---- approve_shell: only shell_* calls wait for approval ---------------------------------------
printf '{"content": "", "tool_calls": [%s]}\n{"content": "ok"}\n' "$(call e1 echo)" >"$tmp/echo.jsonl"
run plain approve_shell.fsm --script "$tmp/echo.jsonl" --tools "$tmp/tools.json" hi
[ "$(rc plain)" = 0 ] || fail "approve_shell, echo: exit $(rc plain): $(cat "$tmp/plain.err")"
printf '{"content": "", "tool_calls": [%s, %s]}\n{"content": "ok"}\n' "$(call e1 echo)" "$(call r1 shell_run)" >"$tmp/shell.jsonl"
run shell approve_shell.fsm --script "$tmp/shell.jsonl" --tools "$tmp/tools.json" hi
[ "$(rc shell)" = 1 ] && grep -q "AWAITING_APPROVAL" "$tmp/shell.err" || fail "approve_shell, shell_run: $(cat "$tmp/shell.err")"
run shellok approve_shell.fsm --script "$tmp/shell.jsonl" --tools "$tmp/tools.json" --on AWAITING_APPROVAL=approve hi
[ "$(rc shellok)" = 0 ] && [ "$(tools_run shellok)" = 2 ] || fail "approve_shell approved: $(cat "$tmp/shellok.err")"
replays shellok approve_shell.fsm

# ---- end_on_failure: a failed turn ends the session (a terminal state), where the shipped spec
# keeps it at rest (Idle) with the failure recorded ------------------------------------------------
printf '%s\n' '{"error": {"status": 400, "message": "bad request", "retryable": false}}' >"$tmp/bad.jsonl"
run dead end_on_failure.fsm --script "$tmp/bad.jsonl" hi
[ "$(rc dead)" = 1 ] && grep -q "bad request" "$tmp/dead.err" || fail "end_on_failure: $(cat "$tmp/dead.err")"
replays dead end_on_failure.fsm
grep -q "session  Failed" "$tmp/dead.r1" && grep -q "status   ended (failed)" "$tmp/dead.r1" \
  || fail "end_on_failure: the session did not end: $(cat "$tmp/dead.r1")"
"$agentc" run --provider script --script "$tmp/bad.jsonl" --journal "$tmp/shipped.journal" hi >/dev/null 2>&1 </dev/null
"$agentc" replay "$tmp/shipped.journal" >"$tmp/shipped.r"
grep -q "session  Idle" "$tmp/shipped.r" && grep -q "status   idle" "$tmp/shipped.r" \
  && grep -q "turn     failed" "$tmp/shipped.r" && grep -q "error    bad request" "$tmp/shipped.r" \
  || fail "the shipped spec does not keep the session after a failed turn: $(cat "$tmp/shipped.r")"

# ---- finish_tool: the finish call's answer argument ends the turn ------------------------------
printf '%s\n' '{"content": "", "tool_calls": [{"id": "f1", "name": "finish", "arguments": "{\"answer\": \"forty-two\"}"}]}' >"$tmp/fin.jsonl"
run fin finish_tool.fsm --script "$tmp/fin.jsonl" hi
[ "$(rc fin)" = 0 ] || fail "finish_tool: exit $(rc fin): $(cat "$tmp/fin.err")"
[ "$(cat "$tmp/fin.out")" = "forty-two" ] || fail "finish_tool: answer '$(cat "$tmp/fin.out")'"
replays fin finish_tool.fsm
# other tools still run, then finish
printf '{"content": "", "tool_calls": [%s]}\n%s\n' "$(call e1 echo)" \
  '{"content": "", "tool_calls": [{"id": "f2", "name": "finish", "arguments": "{\"answer\": \"after echo\"}"}]}' >"$tmp/fin2.jsonl"
run fin2 finish_tool.fsm --script "$tmp/fin2.jsonl" --tools "$tmp/tools.json" hi
[ "$(rc fin2)" = 0 ] && grep -q "after echo" "$tmp/fin2.out" && [ "$(tools_run fin2)" = 1 ] \
  || fail "finish_tool after a tool: $(cat "$tmp/fin2.out" "$tmp/fin2.err")"

# ---- retry_429: only a 429 is retried, with its own backoff ------------------------------------
printf '%s\n' '{"error": {"status": 429, "message": "slow down", "retryable": true}}' '{"content": "after 429"}' >"$tmp/429.jsonl"
run r429 retry_429.fsm --script "$tmp/429.jsonl" --param rate_limit_backoff=10ms hi
[ "$(rc r429)" = 0 ] && grep -q "after 429" "$tmp/r429.out" || fail "retry_429 on 429: $(cat "$tmp/r429.err")"
grep -q "retry 1" "$tmp/r429.out" "$tmp/r429.err" || fail "retry_429: no retry reported"
replays r429 retry_429.fsm
printf '%s\n' '{"error": {"status": 503, "message": "unavailable", "retryable": true}}' '{"content": "never"}' >"$tmp/503.jsonl"
run r503 retry_429.fsm --script "$tmp/503.jsonl" --param rate_limit_backoff=10ms hi
[ "$(rc r503)" = 1 ] && grep -q "unavailable" "$tmp/r503.err" || fail "retry_429 on 503: $(cat "$tmp/r503.err")"
grep -q never "$tmp/r503.out" && fail "retry_429: a 503 was retried"
# ---- renamed_states: the session machine and its states renamed, the same behaviour ----------
run renamed renamed_states.fsm --script "$tmp/two.jsonl" --tools "$tmp/tools.json" hi
[ "$(rc renamed)" = 0 ] && grep -q done "$tmp/renamed.out" && [ "$(tools_run renamed)" = 4 ] \
  || fail "renamed_states: $(cat "$tmp/renamed.out" "$tmp/renamed.err")"
replays renamed renamed_states.fsm
grep -q "conversation Idle" "$tmp/renamed.r1" || fail "renamed_states: the replay: $(tail -3 "$tmp/renamed.r1")"
# ---- the README table gives each spec's diff size ---------------------------------------------
for f in "$g"/*.fsm; do
  n=$(diff spec/agent.fsm "$f" | grep -c '^[<>]')
  b=$(basename "$f")
  grep -q "^| \[$b\]($b) | .* | $n | " "$g/README.md" || fail "$g/README.md: no row for $b with diff size $n"
done
echo "gallery: ok"
