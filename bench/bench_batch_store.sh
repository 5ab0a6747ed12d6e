#!/usr/bin/env bash
# The durable store's cost in a batch: `agentc batch` of N sessions (default 500) at
# concurrency C (default 100) against the loopback agentc_test_httpd --mode calc (3 LLM
# calls + 2 builtin:calculator calls per session), with every session stored (--db, a fresh
# store per run) and unstored, alternated RUNS times (default 5) in one run. Prints the CPU
# time (user + sys) per session of each and the ratio stored / unstored of each pair as
# min / median / max (target: 1.3x).
#
#   bench/bench_batch_store.sh AGENTC AGENTC_TEST_HTTPD [N] [C] [RUNS]
#   (or: cmake --build BUILD --target bench_batch_store)
set -uo pipefail
agentc="$1" httpd="$2" n="${3:-500}" conc="${4:-100}" runs="${5:-5}"
tmp=$(mktemp -d)
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

"$httpd" --port-file "$tmp/port" --mode calc &
server_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { echo "bench_batch_store: server did not start" >&2; exit 1; }
base="http://127.0.0.1:$(cat "$tmp/port")/v1"

for i in $(seq 1 "$n"); do
  printf '{"id": %d, "prompt": "What is %d * 3, then %d + 7?"}\n' "$i" "$i" "$((i * 3))"
done >"$tmp/in.jsonl"

# run STORE(0|1): prints the CPU seconds (user + sys) of one agentc batch
run() {
  local db=()
  if [ "$1" = 1 ]; then
    rm -f "$tmp"/store.db*
    db=(--db "$tmp/store.db")
  fi
  (BENCH_KEY=x "$agentc" batch "$tmp/in.jsonl" --base-url "$base" --model bench \
    --api-key-env BENCH_KEY --tools builtin:calculator --concurrency "$conc" "${db[@]}" \
    >"$tmp/out" 2>"$tmp/err" || { echo "bench_batch_store: agentc batch failed: $(head -3 "$tmp/err")" >&2; exit 1; }
   times >"$tmp/times") || exit 1
  local ok
  ok=$(grep -c '"status":"completed"' "$tmp/out")
  [ "$ok" -eq "$n" ] || { echo "bench_batch_store: only $ok sessions completed" >&2; exit 1; }
  tail -n1 "$tmp/times" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.4f", t }'
}

run 0 >/dev/null || exit 1 # warm the page cache
rows=()
for r in $(seq 1 "$runs"); do
  off=$(run 0) || exit 1
  on=$(run 1) || exit 1
  rows+=("$(awk -v a="$on" -v b="$off" -v n="$n" 'BEGIN { printf "%.2f %.3f %.3f", (b > 0 ? a / b : 0), a / n * 1000, b / n * 1000 }')")
done
echo "agentc batch: $n sessions at concurrency $conc, 3 LLM calls + 2 tool calls each, stored vs unstored, $runs alternated runs"
printf '%s\n' "${rows[@]}" | sort -n | awk '{ r[NR] = $1; a[NR] = $2; b[NR] = $3 } END {
  m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
  printf "  CPU per session, stored / unstored: %.2f / %.2f / %.2f (min / median / max)\n", r[1], m, r[NR]
  for (i = 1; i <= NR; i++) printf "    run: stored %.3f ms, unstored %.3f ms per session\n", a[i], b[i]
  printf "  target 1.3x: %s\n", (m <= 1.3 ? "met" : "NOT met")
}'
