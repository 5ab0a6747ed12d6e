#!/usr/bin/env bash
# The generated suite of spec/agent.fsm detects single-transition mutations of it (a target
# changed, a guard negated): for each mutant that still checks, some scenario's path differs
# from the original's (or the run no longer ends). Prints the kill ratio.
agentc="$1"
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.." || exit 1
"$agentc" testgen spec/agent.fsm --run --out "$tmp/run" >/dev/null 2>&1 || fail "testgen on the original spec"
# mutations: a target changed, a guard negated; the original suite's paths differ
mutate() { sed -e "$1" spec/agent.fsm >"$tmp/m.fsm"; ! cmp -s spec/agent.fsm "$tmp/m.fsm" || fail "mutation $1 did nothing"; }
killed=0 total=0
for m in 's/^    STREAMING -> SUCCESS        on llm.completed \/ record_assistant$/    STREAMING -> ERROR          on llm.completed \/ record_assistant/' \
         's/\[retryable \&\& retries_left\]/[!(retryable \&\& retries_left)]/' \
         's/^    TOOL_EXECUTING -> SUCCESS on tool.completed \[last_tool_result\]/    TOOL_EXECUTING -> SUCCESS on tool.completed [!last_tool_result]/' \
         's/\[has_tool_calls\]/[!has_tool_calls]/' \
         's/\[!iterations_left\]/[iterations_left]/'; do
  mutate "$m"
  "$agentc" check "$tmp/m.fsm" >/dev/null 2>&1 || continue
  total=$((total + 1))
  rm -rf "$tmp/mut"
  "$agentc" testgen "$tmp/m.fsm" --run --out "$tmp/mut" --json >/dev/null 2>&1
  for d in "$tmp/run"/*/; do
    n=$(basename "$d")
    if ! cmp -s "$d/expected.steps" "$tmp/mut/$n/expected.steps"; then killed=$((killed + 1)); break; fi
  done
done
[ "$total" -ge 3 ] || fail "too few mutations load ($total)"
echo "mutations killed: $killed of $total"
[ "$killed" -eq "$total" ] || fail "a mutation survived the generated suite ($killed of $total)"
echo "ok"
