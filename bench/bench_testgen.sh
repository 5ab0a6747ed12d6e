#!/usr/bin/env bash
# The cost of auditing a spec: `agentc testgen` (the search's time, candidates and scenarios, and
# the whole --run) on spec/agent.fsm and on a generated spec of 200 states (spec/agent.fsm with
# 179 more session states, each entered from Idle on an outside event of its own and left on
# another or on a user message: a wide spec whose depth-2 candidates the time bound cuts); and
# `agentc coverage` over N stored sessions (default 10,000: a scripted `agentc batch` into a
# fresh store, then coverage --db timed).
#
#   bench/bench_testgen.sh AGENTC [N]   (or: cmake --build BUILD --target bench_testgen)
set -uo pipefail
agentc="$1" n="${2:-10000}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

# testgen SPEC LABEL: the search alone (--out), then the search and the runs (--run)
testgen() {
  local t0 t1 t2
  t0=$(now)
  "$agentc" testgen "$1" --out "$tmp/out-$2" --json >"$tmp/s.json" 2>/dev/null
  t1=$(now)
  "$agentc" testgen "$1" --run --json >"$tmp/r.json" 2>/dev/null
  t2=$(now)
  jq -r --arg l "$2" --arg a "$(ms "$t0" "$t1")" --arg b "$(ms "$t1" "$t2")" \
    '"\($l): \(.scenarios | length) scenarios, search \(.search.candidates) candidates over \(.search.alphabet) stimuli in \(.search.ms) ms\(if .search.bounded then " (bounded)" else "" end); testgen --out \($a) ms, --run \($b) ms; reachable taken \(.covered_reachable) of \(.reachable), \(.covered) of \(.total)"' \
    "$tmp/r.json"
}

# a spec of 200 states: spec/agent.fsm's 21 and 179 more in the session machine
k=179
{
  sed -n '1,/^machine session {/p' spec/agent.fsm | sed '$d'
  printf 'outside event back'; for i in $(seq 1 $k); do printf ', go_%d' "$i"; done; echo
  echo 'machine session {'
  printf '    state W1'; for i in $(seq 2 $k); do printf ', W%d' "$i"; done; echo
  for i in $(seq 1 $k); do
    echo "    Idle -> W$i on go_$i"
    echo "    W$i -> Idle on back"
    echo "    W$i -> Running on user_message / append_user_message"
  done
  sed -n '/^machine session {/,$p' spec/agent.fsm | sed '1d'
} >"$tmp/wide.fsm"
"$agentc" check "$tmp/wide.fsm" >"$tmp/check" 2>&1 || { echo "bench_testgen: the 200-state spec does not check: $(head -5 "$tmp/check")" >&2; exit 1; }

testgen spec/agent.fsm "spec/agent.fsm ($("$agentc" check spec/agent.fsm 2>&1 | grep -o "[0-9]* states" 2>&1))"
testgen "$tmp/wide.fsm" "generated ($(grep -o '[0-9]* states' "$tmp/check"))"

# coverage over n stored sessions
printf '%s\n' '{"tool_calls": [{"name": "calculator", "arguments": "{\"expression\": \"2 * 3\"}"}]}' '{"content": "6"}' >"$tmp/s.jsonl"
for i in $(seq 1 "$n"); do printf '{"id": "b%d", "prompt": "compute %d"}\n' "$i" "$i"; done >"$tmp/in.jsonl"
t0=$(now)
"$agentc" batch "$tmp/in.jsonl" --provider script --script "$tmp/s.jsonl" --tools builtin:calculator \
  --concurrency 200 --db "$tmp/store.db" >/dev/null 2>"$tmp/err" || { echo "bench_testgen: batch: $(head -3 "$tmp/err")" >&2; exit 1; }
t1=$(now)
/usr/bin/time -f '%U %S' -o "$tmp/cpu" "$agentc" coverage spec/agent.fsm --db "$tmp/store.db" --json >"$tmp/c.json" 2>"$tmp/err" \
  || { echo "bench_testgen: coverage: $(head -3 "$tmp/err")" >&2; exit 1; }
t2=$(now)
cpu=$(awk '{printf "%.2f", $1 + $2}' "$tmp/cpu")
jq -r --arg n "$n" --arg b "$(ms "$t0" "$t1")" --arg c "$(ms "$t1" "$t2")" --arg cpu "$cpu" \
  '"coverage over \($n) stored sessions: \($c) ms wall, \($cpu) s CPU (\(.covered) of \(.total) transitions; storing them: \($b) ms)"' "$tmp/c.json"
