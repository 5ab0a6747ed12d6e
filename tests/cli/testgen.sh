#!/usr/bin/env bash
# `agentc testgen`: scenarios written to a folder (the scripted model's turns, the options of
# the run); with --run each runs twice through the real engine, its journal replays with
# --check, both runs' steps are byte-identical, and the transitions no scenario took are listed
# with a reason. On spec/agent.fsm the constructed inputs reach the guards of a retry class by
# HTTP status, a budget over tool calls, an output schema's refusal and a compaction threshold;
# the gallery's specs run as well.
agentc="$1"
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.." || exit 1
need jq

"$agentc" testgen spec/agent.fsm --out "$tmp/gen" >"$tmp/out" || fail "testgen --out: $(cat "$tmp/out")"
[ -s "$tmp/gen/retry_429/script.jsonl" ] || fail "no scripted turns written"
grep -q '"status": 429' "$tmp/gen/retry_429/script.jsonl" || fail "the 429 scenario has no 429"
grep -qx 'max_iterations=1' "$tmp/gen/iteration_budget/args" || fail "the budget scenario sets no budget"
[ -s "$tmp/gen/schema_reject/schema.json" ] || fail "the schema scenario has no schema"

"$agentc" testgen spec/agent.fsm --run --out "$tmp/run" --json >"$tmp/t.json" 2>"$tmp/e" || fail "testgen --run: $(cat "$tmp/t.json" "$tmp/e" | head -c 2000)"
jq -e '[.scenarios[] | select(.problem)] | length == 0' "$tmp/t.json" >/dev/null || fail "a scenario misbehaved: $(jq -c '.scenarios' "$tmp/t.json")"
jq -e '.uncovered | all(.reason | length > 0)' "$tmp/t.json" >/dev/null || fail "an uncovered transition without a reason"
jq -e '(.covered + (.uncovered | length)) == .total' "$tmp/t.json" >/dev/null || fail "covered and uncovered do not add up"
covered() { jq -e --arg m "$1" --arg f "$2" --arg e "$3" --arg t "$4" --arg g "$5" \
  '[.uncovered[] | select(.machine == $m and .from == $f and .event == $e and .to == $t and .guard == $g)] | length == 0' \
  "$tmp/t.json" >/dev/null || fail "not covered: $*"; }
covered process CALLING llm.failed RETRYING 'retryable && retries_left'
covered process STREAMING llm.failed RETRYING 'retryable && retries_left'
covered process CALLING llm.failed ERROR ''
covered process RETRYING timer.fired CALLING ''
covered process TOOL_EXECUTING tool.completed TOOL_EXECUTING ''
covered agent PLANNING '' FAILED '!iterations_left'
covered agent PLANNING '' COMPACTING 'needs_compaction'
covered agent OBSERVING '' PLANNING 'turn_complete && output_retries_left'
covered agent OBSERVING '' FAILED 'turn_complete'
covered process TOOL_EXECUTING context.expanded SUCCESS 'last_tool_result'
covered process TOOL_EXECUTING context.loaded TOOL_EXECUTING ''
# each scenario's expected path is its first run's steps, which the second run repeated
for d in "$tmp/run"/*/; do
  [ -s "$d/expected.steps" ] || fail "$d has no expected path"
  cmp -s <(grep '^{"steps"' "$d/run1.journal") <(grep '^{"steps"' "$d/run2.journal") || fail "$d: two runs differ"
done
# the coverage testgen prints is what `agentc coverage` finds in the journals
"$agentc" coverage spec/agent.fsm "$tmp/run"/*/run1.journal --json >"$tmp/c.json" || fail "coverage of the scenarios"
[ "$(jq .covered "$tmp/c.json")" = "$(jq .covered "$tmp/t.json")" ] || fail "testgen and coverage disagree"
# the project audits itself: its generated suite keeps at least the coverage it has (32 of 66)
"$agentc" coverage spec/agent.fsm "$tmp/run"/*/run1.journal --fail-under 48 >/dev/null 2>"$tmp/e" \
  || fail "the generated suite's coverage of spec/agent.fsm fell: $(cat "$tmp/e")"

# the gallery
for f in examples/specs/*.fsm; do
  "$agentc" testgen "$f" --run --json >"$tmp/g.json" 2>"$tmp/e" || fail "$f: $(jq -c '[.scenarios[] | select(.problem)]' "$tmp/g.json") $(cat "$tmp/e")"
  jq -e '.covered > 0' "$tmp/g.json" >/dev/null || fail "$f: nothing covered"
done

echo "ok"
