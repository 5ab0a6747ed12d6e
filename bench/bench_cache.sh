#!/usr/bin/env bash
# The tool-result cache's savings (not a test): `agentc run` with a scripted model making
# CALLS calls (default 50, one per model turn) to a tool that takes 50 ms, over KEYS distinct
# arguments (default 5), with and without "cache"; RUNS runs each (default 3), alternated.
# Prints the wall time per run and how many times the tool really ran (its ledger).
#   bash bench/bench_cache.sh build/agentc [CALLS] [KEYS] [RUNS]
agentc="$1" calls=${2:-50} keys=${3:-5} runs=${4:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for mode in plain cached; do
  cache=""
  [ $mode = cached ] && cache='"cache": {"ttl": "10m"},'
  cat >"$tmp/$mode.json" <<JSON
{"tools": [{"name": "lookup", "description": "slow lookup", "idempotent": true, $cache
  "command": ["sh", "-c", "cat >/dev/null; echo x >>'$tmp/$mode.ledger'; sleep 0.05; echo value"]}]}
JSON
done
for i in $(seq 1 "$calls"); do
  printf '{"tool_calls": [{"id": "c%d", "name": "lookup", "arguments": "{\\"k\\": %d}"}]}\n' "$i" $((i % keys))
done >"$tmp/script.jsonl"
echo '{"content": "done"}' >>"$tmp/script.jsonl"
echo "$calls calls over $keys keys, a 50 ms tool; wall seconds per run"
for r in $(seq 1 "$runs"); do
  for mode in plain cached; do
    : >"$tmp/$mode.ledger"
    t0=$(date +%s.%N)
    "$agentc" run --no-store --provider script --script "$tmp/script.jsonl" --tools "$tmp/$mode.json" \
      --param max_iterations=1000 go >/dev/null || { echo "run failed"; exit 1; }
    t1=$(date +%s.%N)
    printf '%s run %d: %.2f s, tool ran %d times\n' "$mode" "$r" "$(echo "$t1 - $t0" | bc)" "$(wc -l <"$tmp/$mode.ledger")"
  done
done
