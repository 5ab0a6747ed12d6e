#!/usr/bin/env bash
# Batch benchmark: agentc batch of N sessions (default 1,000) at concurrency C
# (default 200) against the loopback agentc_test_httpd --mode calc; each
# session makes 3 LLM calls (streamed) and 2 builtin:calculator calls.
# Prints the agentc process's CPU time (user + sys) per session and its peak
# RSS, beside a baseline measured in the same run: the same command with one
# session (start-up, spec tables, curl init), so the marginal cost per session
# is (CPU(N) - CPU(1)) / (N - 1).
#
#   bench/bench_batch.sh AGENTC AGENTC_TEST_HTTPD [N] [C]
#   BENCH_BATCH_STORE=1: every session stored (--db, a fresh store per run)
#   (or: cmake --build BUILD --target bench_batch)
set -uo pipefail
agentc="$1" httpd="$2" n="${3:-1000}" conc="${4:-200}"
[ -x /usr/bin/time ] || { echo "bench_batch: needs /usr/bin/time (GNU time)" >&2; exit 1; }
tmp=$(mktemp -d)
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

"$httpd" --port-file "$tmp/port" --mode calc &
server_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { echo "bench_batch: server did not start" >&2; exit 1; }
base="http://127.0.0.1:$(cat "$tmp/port")/v1"

for i in $(seq 1 "$n"); do
  printf '{"id": %d, "prompt": "What is %d * 3, then %d + 7?"}\n' "$i" "$i" "$((i * 3))"
done >"$tmp/in.jsonl"
head -n1 "$tmp/in.jsonl" >"$tmp/one.jsonl"

# run INPUT CONCURRENCY: prints "cpu_seconds peak_rss_kb wall_seconds"
run() {
  # GNU time gives the peak RSS and wall time; bash's `times` the children's
  # CPU to the millisecond (time's own share is negligible).
  (BENCH_KEY=x /usr/bin/time -f "%M %e" -o "$tmp/time" "$agentc" batch "$1" --base-url "$base" \
    --model bench --api-key-env BENCH_KEY --tools builtin:calculator --concurrency "$2" \
    ${BENCH_BATCH_STORE:+--db "$tmp/store-$RANDOM$RANDOM.db"} \
    >"$tmp/out" 2>"$tmp/err" || { echo "bench_batch: agentc batch failed: $(head -3 "$tmp/err")" >&2; exit 1; }
   times >"$tmp/times") || exit 1
  local ok
  ok=$(grep -c '"status":"completed"' "$tmp/out")
  [ "$ok" -eq "$(wc -l <"$1")" ] || { echo "bench_batch: only $ok sessions completed" >&2; exit 1; }
  local cpu
  cpu=$(tail -n1 "$tmp/times" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.4f", t }')
  awk -v cpu="$cpu" '{printf "%s %d %.3f\n", cpu, $1, $2}' "$tmp/time"
}

run "$tmp/one.jsonl" 1 >/dev/null # warm the page cache
read -r base_cpu base_rss base_wall < <(run "$tmp/one.jsonl" 1)
read -r cpu rss wall < <(run "$tmp/in.jsonl" "$conc")
awk -v n="$n" -v c="$conc" -v bc="$base_cpu" -v br="$base_rss" -v cpu="$cpu" -v rss="$rss" -v wall="$wall" 'BEGIN {
  per = (cpu - bc) / (n - 1) * 1000; if (per < 0) per = 0
  printf "agentc batch: %d sessions at concurrency %d, 3 LLM calls + 2 tool calls each\n", n, c
  printf "  baseline (1 session):   %.4f s CPU, peak RSS %.1f MB\n", bc, br / 1024
  printf "  %d sessions:          %.3f s CPU, peak RSS %.1f MB, %.2f s wall (%.0f sessions/s)\n", n, cpu, rss / 1024, wall, (wall > 0 ? n / wall : 0)
  printf "  CPU per session:        %.3f ms (marginal), %.3f ms (total / n)\n", per, cpu / n * 1000
  printf "  ratios: CPU(n)/CPU(1) = %.1fx for %dx the sessions; RSS(n)/RSS(1) = %.2fx\n", (bc > 0 ? cpu / bc : 0), n, (br > 0 ? rss / br : 0)
  printf "  targets: CPU/session < 0.3 ms: %s; peak RSS < 30 MB: %s\n", (per < 0.3 ? "met" : "NOT met"), (rss / 1024 < 30 ? "met" : "NOT met")
}'
