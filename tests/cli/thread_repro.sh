#!/usr/bin/env bash
# The stored-session repro end to end, through `agentc run --session` and `agentc resume`
# after a kill -9 mid-turn, with the gallery's tool budget (examples/specs/tool_budget.fsm):
# turn 1 makes 3 tool calls under max_tool_calls = 3; turn 2 ("just say hi", with --param
# max_tool_calls=2) is killed while its one tool runs; `agentc resume` with no options finishes
# it: turn 2 succeeds (turn 1 is not judged again under the lowered budget), turn 1's events
# stay as recorded, nothing runs again (no model call of turn 1, no tool of turn 1, the killed
# tool not started again), and the next turn resumes nothing.
agentc="$1"
. "$(dirname "$0")/lib.sh"
need jq
export AGENTC_DB="$tmp/sessions.db"
spec=examples/specs/tool_budget.fsm
calc() { jq -cn --arg i "$1" --arg e "$2" '{id: $i, name: "calculator", arguments: ({expression: $e} | tojson)}'; }
{
  jq -cn --argjson a "$(calc c1 1+1)" --argjson b "$(calc c2 2+2)" --argjson c "$(calc c3 3+3)" '{tool_calls: [$a, $b, $c]}'
  echo '{"content": "The answer is 6."}'
  echo '{"tool_calls": [{"id": "s1", "name": "sleeper", "arguments": "{}"}]}'
  echo '{"content": "hi"}'
  echo '{"content": "hello"}'
} >"$tmp/script.jsonl"
# a tool that says it started, then takes its time (killed meanwhile)
jq -n --arg ran "$tmp/ran" '{tools: [{name: "sleeper", description: "takes a while",
  command: ["sh", "-c", ("echo $$ >>" + $ran + "; exec sleep 20")]}]}' >"$tmp/tools.json"
trap 'for p in $(cat "$tmp/ran" 2>/dev/null); do kill "$p" 2>/dev/null; done; cleanup' EXIT
journal() { rm -f "$tmp/j.jsonl"; "$agentc" sessions export "$1" -o "$tmp/j.jsonl" 2>/dev/null || fail "export $1"; }
events_upto() { jq -c --argjson k "$2" 'select(.n != null and .n <= $k)' "$1"; }
count() { jq -s --arg e "$2" 'map(select(.ev == $e)) | length' "$1"; }

# ---- turn 1: three tool calls under the budget of 3 --------------------------------------
"$agentc" run --provider script --script "$tmp/script.jsonl" --tools builtin:calculator \
  --tools "$tmp/tools.json" --spec "$spec" --session t "add 1+1 then 2+2 then 3+3" >"$tmp/out" 2>"$tmp/err" \
  || fail "turn 1: $(cat "$tmp/err")"
grep -qx "The answer is 6." "$tmp/out" || fail "turn 1 answer: $(cat "$tmp/out")"
journal t
cp "$tmp/j.jsonl" "$tmp/turn1.jsonl"
end1=$(jq -s 'map(select(.n != null) | .n) | max' "$tmp/turn1.jsonl")
[ "$(count "$tmp/turn1.jsonl" tool.completed)" = 3 ] || fail "turn 1 ran $(count "$tmp/turn1.jsonl" tool.completed) tools"

# ---- turn 2 with the budget lowered, killed -9 while its tool runs --------------------------
"$agentc" run --session t --param max_tool_calls=2 "just say hi" >"$tmp/out2" 2>"$tmp/err2" &
bg=$!
for _ in $(seq 1 600); do [ -s "$tmp/ran" ] && break; sleep 0.05; done
[ -s "$tmp/ran" ] || { kill -9 "$bg"; fail "turn 2's tool did not start: $(cat "$tmp/err2")"; }
kill -9 "$bg"; wait "$bg" 2>/dev/null
! grep -q "budget" "$tmp/err2" || fail "turn 2 re-judged turn 1 before the kill: $(cat "$tmp/err2")"
"$agentc" sessions show t --json | jq -e '.session.status == "running"' >/dev/null \
  || fail "turn 2 did not stop mid-turn: $("$agentc" sessions show t --json | jq -c .session.status)"

# ---- resume with no options: turn 2 ends under its own agent, nothing runs again ------------
"$agentc" resume t --jsonl >"$tmp/out" 2>"$tmp/err" || fail "resume: $(cat "$tmp/err") $(cat "$tmp/out")"
has_line "$tmp/out" '.type == "done" and .status == "completed" and .answer == "hi"' \
  || fail "resume did not finish turn 2: $(cat "$tmp/out")"
! grep -q "budget" "$tmp/err" "$tmp/out" || fail "resume re-judged turn 1: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/ran")" -eq 1 ] || fail "the killed tool ran again ($(wc -l <"$tmp/ran") runs)"
journal t
[ "$(events_upto "$tmp/j.jsonl" "$end1")" = "$(events_upto "$tmp/turn1.jsonl" "$end1")" ] \
  || fail "turn 1's events changed"
[ "$(count "$tmp/j.jsonl" llm.completed)" = 4 ] \
  || fail "$(count "$tmp/j.jsonl" llm.completed) model calls recorded, not 4 (2 per turn)"
[ "$(count "$tmp/j.jsonl" tool.completed)" = 4 ] || fail "$(count "$tmp/j.jsonl" tool.completed) tool results, not 4"
jq -s -e 'map(select(.ev == "tool.completed" and .data.id == "s1"))[0].data.content
  | test("interrupted")' "$tmp/j.jsonl" >/dev/null \
  || fail "the killed tool's result: $(jq -c 'select(.ev == "tool.completed" and .data.id == "s1") | .data' "$tmp/j.jsonl")"
jq -s -e --argjson k "$end1" 'map(select(.ev == "agent.changed")) | length == 1 and .[0].n == $k + 1
  and .[0].data.what == ["params.max_tool_calls"]' "$tmp/j.jsonl" >/dev/null \
  || fail "the budget change is not one record after turn 1: $(grep agent.changed "$tmp/j.jsonl")"
"$agentc" replay "$tmp/j.jsonl" --check >"$tmp/r" || fail "replay --check: $(cat "$tmp/r")"

# ---- turn 3 without options: nothing resumed, nothing run again ----------------------------
"$agentc" run --session t "hello again" >"$tmp/out" 2>"$tmp/err" || fail "turn 3: $(cat "$tmp/err")"
grep -qx "hello" "$tmp/out" || fail "turn 3 answer: $(cat "$tmp/out")"
! grep -q "resuming" "$tmp/err" || fail "turn 3 resumed a turn: $(cat "$tmp/err")"
journal t
[ "$(count "$tmp/j.jsonl" llm.completed)" = 5 ] || fail "turn 3 made other model calls than its own"
echo ok
