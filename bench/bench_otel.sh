#!/usr/bin/env bash
# What tracing costs a batch: `agentc batch` of N sessions (default 1000) at concurrency C
# (default 200) against the loopback agentc_test_httpd --mode calc (3 LLM calls + 2
# builtin:calculator calls per session), traced to a second agentc_test_httpd acting as the
# collector and untraced, alternated RUNS times (default 5). Prints the CPU time per session of
# each, the ratio traced / untraced (min / median / max; target 1.1x), peak RSS of each, the
# bytes exported per turn, the spans dropped and the longest loop stall an export step caused
# (the exporter's own account, OTEL_LOG_LEVEL=info). The queue holds every span of the batch
# (OTEL_BSP_MAX_QUEUE_SIZE), so the traced run pays for all of them: none is dropped.
#
#   bench/bench_otel.sh AGENTC AGENTC_TEST_HTTPD [N] [C] [RUNS]
#   (or: cmake --build BUILD --target bench_otel)
set -uo pipefail
agentc="$1" httpd="$2" n="${3:-1000}" conc="${4:-200}" runs="${5:-5}"
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
start() { # NAME ARGS...
  "$httpd" --port-file "$tmp/$1.port" --mode calc "${@:2}" &
  pids+=($!)
  for _ in $(seq 1 100); do [ -s "$tmp/$1.port" ] && break; sleep 0.05; done
  [ -s "$tmp/$1.port" ] || { echo "bench_otel: $1 did not start" >&2; exit 1; }
}
start model
start collector # it keeps nothing: the exporter counts what it took
base="http://127.0.0.1:$(cat "$tmp/model.port")/v1"
endpoint="http://127.0.0.1:$(cat "$tmp/collector.port")"
for i in $(seq 1 "$n"); do
  printf '{"id": %d, "prompt": "What is %d * 3, then %d + 7?"}\n' "$i" "$i" "$((i * 3))"
done >"$tmp/in.jsonl"
have_time=0
command -v /usr/bin/time >/dev/null && have_time=1

# run TRACED(0|1): prints "CPU_SECONDS PEAK_RSS_KB" of one agentc batch
run() {
  local env=(env -u OTEL_EXPORTER_OTLP_ENDPOINT)
  [ "$1" = 1 ] && env=(env OTEL_EXPORTER_OTLP_ENDPOINT="$endpoint" OTEL_LOG_LEVEL=info
    OTEL_BSP_MAX_QUEUE_SIZE=$((n * 8)))
  local timer=()
  [ $have_time = 1 ] && timer=(/usr/bin/time -f "%U %S %M" -o "$tmp/time")
  # the CPU time by the subshell's `times` (milliseconds; GNU time prints hundredths)
  (BENCH_KEY=x "${timer[@]}" "${env[@]}" "$agentc" batch "$tmp/in.jsonl" --base-url "$base" --model bench \
    --api-key-env BENCH_KEY --tools builtin:calculator --concurrency "$conc" --no-store \
    >"$tmp/out" 2>"$tmp/err" && times >"$tmp/times") ||
    { echo "bench_otel: agentc batch failed: $(head -3 "$tmp/err")" >&2; exit 1; }
  local ok
  ok=$(grep -c '"status":"completed"' "$tmp/out")
  [ "$ok" -eq "$n" ] || { echo "bench_otel: only $ok sessions completed" >&2; exit 1; }
  sed -n 2p "$tmp/times" | awk -v rss="$(awk '{ print $3 }' "$tmp/time")" '{ gsub(/s/, "", $1); gsub(/s/, "", $2)
    split($1, u, "m"); split($2, s, "m"); printf "%.4f %d", u[1] * 60 + u[2] + s[1] * 60 + s[2], rss }'
  # traced: spans exported, bytes, dropped, the longest export step in ms
  [ "$1" = 1 ] || return 0
  sed -n 's/^agentc: traces: \([0-9]*\) spans exported (\([0-9]*\) bytes), \([0-9]*\) dropped, longest export step \([0-9.]*\) ms$/ \1 \2 \3 \4/p' "$tmp/err"
}

[ $have_time = 1 ] || { echo "bench_otel: needs GNU time (/usr/bin/time)" >&2; exit 77; }
run 0 >/dev/null || exit 1 # warm the page cache
rows=()
for r in $(seq 1 "$runs"); do
  on=$(run 1) || exit 1
  off=$(run 0) || exit 1
  rows+=("$(awk -v a="$on" -v b="$off" -v n="$n" 'BEGIN { split(a, x, " "); split(b, y, " ")
    printf "%.3f %.3f %.3f %d %d %d %d %d %.3f", (y[1] > 0 ? x[1] / y[1] : 0), x[1] / n * 1000, y[1] / n * 1000,
      x[2], y[2], x[4] / n, x[3], x[5], x[6] }')")
done
echo "agentc batch: $n sessions at concurrency $conc, 3 LLM calls + 2 tool calls each, traced vs untraced, $runs alternated runs"
printf '%s\n' "${rows[@]}" | sort -n | awk '{ r[NR] = $1; a[NR] = $2; b[NR] = $3; ra[NR] = $4; rb[NR] = $5; by[NR] = $6
  sp[NR] = $7; dr[NR] = $8; st[NR] = $9 } END {
  m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
  printf "  CPU per session, traced / untraced: %.2f / %.2f / %.2f (min / median / max)\n", r[1], m, r[NR]
  for (i = 1; i <= NR; i++)
    printf "    run: traced %.3f ms, untraced %.3f ms per session; peak RSS %d / %d KB; %d bytes exported per turn; %d spans exported, %d dropped; longest export stall %.3f ms\n", a[i], b[i], ra[i], rb[i], by[i], sp[i], dr[i], st[i]
  printf "  target 1.1x: %s\n", (m <= 1.1 ? "met" : "NOT met")
}'
