#!/usr/bin/env bash
# The generated suite of spec/agent.fsm detects single-transition mutations of it: every
# transition's target changed (to the next state of its machine) and every guard negated. Each
# mutant that still checks runs the original suite (testgen --from); it is killed when a
# scenario's path differs from the expected one (or the run no longer ends as it did). Prints
# the kill ratio and fails below 90%.
agentc="$1"
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.." || exit 1
need jq
"$agentc" testgen spec/agent.fsm --time-limit 240000 --out "$tmp/suite" >/dev/null 2>&1 || fail "testgen on the original spec"
"$agentc" testgen spec/agent.fsm --from "$tmp/suite" >/dev/null 2>&1 || fail "the suite on its own spec"

declare -A next=([Idle]=Running [Running]=Paused [Paused]=Idle [Completed]=Idle [Cancelled]=Idle [Closed]=Idle
  [PLANNING]=OBSERVING [OBSERVING]=COMPACTING [EXECUTING]=PLANNING [COMPACTING]=EXECUTING [COMPLETED]=FAILED [FAILED]=COMPLETED
  [CALLING]=STREAMING [STREAMING]=RETRYING [TOOL_EXECUTING]=SUCCESS [RETRYING]=ERROR [SUCCESS]=ERROR [ERROR]=SUCCESS)
mutants=()
while IFS=: read -r n line; do
  t=$(sed -E 's/.* -> +([A-Za-z_]+).*/\1/' <<<"$line")
  [ -n "${next[$t]:-}" ] && mutants+=("${n}s/-> *$t\\b/-> ${next[$t]}/")
done < <(grep -nE '^    [A-Za-z_*, ]+ -> +[A-Za-z_]+' spec/agent.fsm)
while IFS=: read -r n _; do
  mutants+=("${n}s/\\[\\([^]]*\\)\\]/[!(\\1)]/")
done < <(grep -nE '^    [A-Za-z_*, ]+(-> +[A-Za-z_]+ +)?(on [a-z_.A-Z]+ +)?\[' spec/agent.fsm)

killed=0 total=0 survivors=""
for m in "${mutants[@]}"; do
  sed -e "$m" spec/agent.fsm >"$tmp/m.fsm"
  cmp -s spec/agent.fsm "$tmp/m.fsm" && fail "mutation $m did nothing"
  "$agentc" check "$tmp/m.fsm" >/dev/null 2>&1 || continue
  total=$((total + 1))
  "$agentc" testgen "$tmp/m.fsm" --from "$tmp/suite" --fail-fast --json >"$tmp/r.json" 2>/dev/null
  if jq -e '[.scenarios[] | select(.problem)] | length > 0' "$tmp/r.json" >/dev/null 2>&1; then
    killed=$((killed + 1))
  else
    survivors="$survivors
  $m: $(sed -n "${m%%s/*}p" "$tmp/m.fsm" | sed 's/^ *//')"
  fi
done
[ "$total" -ge 30 ] || fail "too few mutations load ($total of ${#mutants[@]})"
echo "mutations killed: $killed of $total ($((100 * killed / total))%)${survivors:+; surviving:$survivors}"
[ $((100 * killed)) -ge $((90 * total)) ] || fail "the generated suite kills under 90% of the mutants"
echo "ok"
