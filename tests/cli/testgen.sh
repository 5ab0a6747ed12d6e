#!/usr/bin/env bash
# `agentc testgen`: a search on the real engine writes scenarios (the scripted model's turns, the
# options of the run, the expected path); with --run each runs twice through `agentc run`, its
# journal replays with --check, both runs' steps are byte-identical and the path is the expected
# one. On spec/agent.fsm every transition the engine's posting rules let happen is taken (pause,
# resume, a queued message, cancel, close, ping, tools.changed, rollback and turn.cancel posted
# with --post-at included); the transitions left out are the ones of the initial state, which
# the engine leaves on spawn as it creates the session. On specs written for the test the search
# constructs the inputs their guards need (an HTTP status, a tool-call budget, a cut answer, a
# token budget, a timer, an outside event, a guardrail); every gallery spec is covered the same.
agentc="$1"
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.." || exit 1
need jq
# the searches get --time-limit $tl: the default bound (20 s) is what a loaded machine can
# spend before the search reaches the transitions asserted below (the test's timeout bounds it)
tl=240000

"$agentc" testgen spec/agent.fsm --time-limit $tl --out "$tmp/gen" >"$tmp/out" || fail "testgen --out: $(cat "$tmp/out")"
grep -Eq '^[0-9]+ scenarios written to ' "$tmp/out" || fail "testgen --out says: $(cat "$tmp/out")"
[ -s "$tmp/gen/s001/script.jsonl" ] && [ -s "$tmp/gen/s001/args" ] && [ -s "$tmp/gen/s001/expected.path" ] \
  || fail "s001 is not a scenario: $(ls "$tmp/gen/s001")"
grep -l '"status":503' "$tmp/gen"/*/script.jsonl >/dev/null || fail "no scenario answers HTTP 503"
grep -lx 'max_iterations=1' "$tmp/gen"/*/args >/dev/null || fail "no scenario sets a small iteration budget"
grep -lx 'session.Running=pause' "$tmp/gen"/*/args >/dev/null || fail "no scenario pauses a running turn"
ls "$tmp/gen"/*/schema.json >/dev/null 2>&1 || fail "no scenario has an output schema"
grep -q -- '--> Paused /' "$tmp/gen"/*/expected.path || fail "no expected path pauses"

"$agentc" testgen spec/agent.fsm --run --time-limit $tl --out "$tmp/run" --json >"$tmp/t.json" 2>"$tmp/e" \
  || fail "testgen --run: $(jq -c '[.scenarios[] | select(.problem)], .uncovered' "$tmp/t.json" | head -c 3000) $(cat "$tmp/e")"
jq -e '[.scenarios[] | select(.problem)] | length == 0' "$tmp/t.json" >/dev/null || fail "a scenario misbehaved"
jq -e '.uncovered | all(.reason | length > 0)' "$tmp/t.json" >/dev/null || fail "an uncovered transition without a reason"
jq -e '(.covered + (.uncovered | length)) == .total' "$tmp/t.json" >/dev/null || fail "covered and uncovered do not add up"
# the denominator: every transition but the initial state's four (cancel, close, ping, tools.changed)
jq -e '.total == 66 and .reachable == 62 and .covered_reachable == 62' "$tmp/t.json" >/dev/null \
  || fail "spec/agent.fsm: $(jq -c '{total, reachable, covered, covered_reachable}' "$tmp/t.json")"
jq -e '[.uncovered[] | select(.reachable)] | length == 0' "$tmp/t.json" >/dev/null || fail "a reachable transition not taken"
jq -e '[.uncovered[] | select(.from == "Created" and (.reason | test("spawn")))] | length == 4' "$tmp/t.json" >/dev/null \
  || fail "the initial state's rows: $(jq -c '.uncovered' "$tmp/t.json")"
covered() { jq -e --arg m "$1" --arg f "$2" --arg e "$3" --arg t "$4" --arg g "$5" \
  '[.uncovered[] | select(.machine == $m and .from == $f and .event == $e and .to == $t and .guard == $g)] | length == 0' \
  "$tmp/t.json" >/dev/null || fail "not covered: $*"; }
covered session Running pause Paused ''
covered session Paused resume Running 'turn_unfinished'
covered session Running agent.COMPLETED Running 'has_queued_message'
covered session Paused turn.cancel Running 'has_queued_message'
covered session Paused rollback Running 'has_queued_message'
covered session Idle inactivity_timeout Completed ''
covered process STREAMING llm.failed RETRYING 'retryable && retries_left'
covered agent OBSERVING '' FAILED 'turn_complete'
# each scenario: both runs' steps are byte-identical, and the path is the expected one
for d in "$tmp/run"/*/; do
  cmp -s <(grep '^{"steps"' "$d/run1.journal") <(grep '^{"steps"' "$d/run2.journal") || fail "$d: two runs differ"
done
# the coverage testgen prints is what `agentc coverage` finds in the journals
"$agentc" coverage spec/agent.fsm "$tmp/run"/*/run1.journal --json >"$tmp/c.json" || fail "coverage of the scenarios"
[ "$(jq .covered "$tmp/c.json")" = "$(jq .covered "$tmp/t.json")" ] || fail "testgen and coverage disagree"
"$agentc" coverage spec/agent.fsm "$tmp/run"/*/run1.journal --fail-under 93 >/dev/null 2>"$tmp/e" \
  || fail "the generated suite's coverage of spec/agent.fsm fell: $(cat "$tmp/e")"
# the text report
"$agentc" testgen spec/agent.fsm --run --time-limit $tl --out "$tmp/text-run" >"$tmp/text" 2>&1 || fail "testgen --run (text): $(tail -5 "$tmp/text")"
grep -qx 'reachable: 62 of 66' "$tmp/text" || fail "no reachable line: $(tail -3 "$tmp/text")"
grep -q '^transitions: 62 of 66 taken (93.9%); of the reachable: 62 of 62 (100.0%)$' "$tmp/text" || fail "summary: $(tail -2 "$tmp/text")"
grep -Eq '^search: [0-9]+ candidates over [0-9]+ stimuli in [0-9]+ ms' "$tmp/text" || fail "no search line"

# a suite run against an edited spec: the path that differs is reported, exit 1
sed 's/^    STREAMING -> SUCCESS        on llm.completed \/ record_assistant$/    STREAMING -> ERROR          on llm.completed \/ record_assistant/' \
  spec/agent.fsm >"$tmp/m.fsm"
"$agentc" testgen "$tmp/m.fsm" --from "$tmp/gen" --json >"$tmp/m.json" 2>"$tmp/e" && fail "a mutant passed the suite"
jq -e '[.scenarios[] | select(.problem == "the path differs from the expected one")] | length > 0' "$tmp/m.json" >/dev/null \
  || fail "the mutant's paths: $(jq -c '.scenarios[0]' "$tmp/m.json")"
"$agentc" testgen spec/agent.fsm --from "$tmp/gen" >/dev/null 2>&1 || fail "the suite fails on its own spec"
"$agentc" testgen spec/agent.fsm --from "$tmp/nothing" >/dev/null 2>"$tmp/e"; [ $? = 3 ] || fail "--from a missing folder"
"$agentc" testgen spec/agent.fsm --run --depth 9 >/dev/null 2>&1; [ $? = 2 ] || fail "--depth 9 accepted"
# the bounds: depth 0 is one answer; a reachable transition is then beyond the bound
"$agentc" testgen spec/agent.fsm --run --depth 0 --json >"$tmp/d.json" 2>/dev/null && fail "depth 0 covered everything"
jq -e '(.scenarios | length) == 1 and ([.uncovered[] | select(.reachable and (.reason | test("search bound")))] | length > 0)' \
  "$tmp/d.json" >/dev/null || fail "depth 0: $(jq -c '.search, .uncovered[5]' "$tmp/d.json")"

# specs that need constructed inputs, and the gallery: every reachable transition is taken (the
# guardrails' commands are processes: their search is bounded at depth 3, which covers them)
for f in tests/cli/testgen/budgets.fsm examples/specs/*.fsm; do
  n=$(basename "$f" .fsm) depth=4
  [ "$n" = guardrails ] && depth=3
  "$agentc" testgen "$f" --run --depth $depth --time-limit $tl --out "$tmp/g-$n" --json >"$tmp/g.json" 2>"$tmp/e" \
    || fail "$f: $(jq -c '[.scenarios[] | select(.problem)], [.uncovered[] | select(.reachable)]' "$tmp/g.json") $(cat "$tmp/e")"
done
grep -l '"finish_reason":"length"' "$tmp/g-budgets"/*/script.jsonl >/dev/null || fail "no cut answer constructed"
grep -lx 'max_out=0' "$tmp/g-budgets"/*/args >/dev/null || fail "no token budget constructed"
grep -q -- '--> ERROR / fail("the session'"'"'s tool-call budget is spent")' "$tmp/g-budgets"/*/expected.path \
  || fail "the tool-call budget is not reached"
grep -q -- 'RATE_LIMITED' "$tmp/g-retry_429"/*/expected.path || fail "retry_429: no rate-limited path"
grep -lx 'turn_timeout=1ms' "$tmp/g-turn_timeout"/*/args >/dev/null || fail "turn_timeout: the timer is not made short"
grep -lx 'process.AWAITING_APPROVAL=deny' "$tmp/g-approve_tools"/*/args >/dev/null || fail "approve_tools: no deny posted"
grep -l 'tripped by the test' "$tmp/g-guardrails"/*/guards.json >/dev/null || fail "guardrails: none trips"

# --tools FILE: the user's tools are given to every run (the call a `calls "shell_*"` guard needs
# is answered by the file's tool, not as an unknown tool); --handlers takes builtin only
printf '{"tools": [{"name": "shell_x", "description": "echoes", "command": ["sh", "-c", "cat >/dev/null; echo shell ran"]}]}' >"$tmp/own.json"
"$agentc" testgen examples/specs/approve_shell.fsm --handlers builtin --tools "$tmp/own.json" --run --depth 3 --time-limit $tl \
  --out "$tmp/own" --json >"$tmp/own.out" 2>"$tmp/e" || fail "--tools: $(jq -c '[.scenarios[] | select(.problem)]' "$tmp/own.out") $(cat "$tmp/e")"
grep -lx "$tmp/own.json" "$tmp/own"/*/args >/dev/null || fail "--tools is not in the scenarios' args"
grep -l '"shell ran' "$tmp/own"/*/run1.journal >/dev/null || fail "the file's shell_x did not answer a call"
"$agentc" testgen spec/agent.fsm --handlers none --run >/dev/null 2>"$tmp/e"; [ $? = 2 ] && grep -q -- '--handlers builtin' "$tmp/e" \
  || fail "--handlers none: $(cat "$tmp/e")"
"$agentc" testgen spec/agent.fsm --tools "$tmp/missing.json" --run >/dev/null 2>"$tmp/e"; [ $? = 2 ] && grep -q 'missing.json' "$tmp/e" \
  || fail "--tools of a missing file: $(cat "$tmp/e")"

echo "ok"
