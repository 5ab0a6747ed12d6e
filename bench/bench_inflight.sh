#!/usr/bin/env bash
# Memory of many sessions in flight at once: agentc batch of N sessions (default 1,000) all at
# once (concurrency N) against agentc_test_httpd --mode calc, in one of two modes:
#   slow     (default) each answer streamed slowly (prompt SLOW: 100 words, one per 100 ms,
#            ~10 s a session), so every session holds an open stream at the peak;
#   latency  the server answers each call after 1.5 s (--latency 1500), the calculator workload
#            (3 model calls, 2 tool calls a session), so every session waits on a call at once,
#            three times; the ideal wall time is 3 x 1.5 s.
# Prints the process's peak RSS, beside the same command with one session (the baseline measured
# in the same run), and the difference per session; in latency mode also the wall time against
# the ideal, RUNS times (default 5), as min / median / max.
#
#   bench/bench_inflight.sh AGENTC AGENTC_TEST_HTTPD [N] [slow|latency] [RUNS]
set -uo pipefail
agentc="$1" httpd="$2" n="${3:-1000}" mode="${4:-slow}" runs="${5:-5}"
[ -x /usr/bin/time ] || { echo "bench_inflight: needs /usr/bin/time (GNU time)" >&2; exit 1; }
case "$mode" in slow | latency) ;; *) echo "bench_inflight: mode is slow or latency" >&2; exit 2 ;; esac
tmp=$(mktemp -d)
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
latency=() tools=()
[ "$mode" = latency ] && latency=(--latency 1500) tools=(--tools builtin:calculator)
"$httpd" --port-file "$tmp/port" --mode calc "${latency[@]}" &
server_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { echo "bench_inflight: server did not start" >&2; exit 1; }
base="http://127.0.0.1:$(cat "$tmp/port")/v1"
for i in $(seq 1 "$n"); do
  if [ "$mode" = slow ]; then
    printf '{"id": %d, "prompt": "SLOW story %d"}\n' "$i" "$i"
  else
    printf '{"id": %d, "prompt": "What is %d * 3, then %d + 7?"}\n' "$i" "$i" "$((i * 3))"
  fi
done >"$tmp/in.jsonl"
head -n1 "$tmp/in.jsonl" >"$tmp/one.jsonl"
rss() { # INPUT: "peak_rss_kb wall_seconds"
  BENCH_KEY=x /usr/bin/time -f "%M %e" -o "$tmp/time" "$agentc" batch "$1" --base-url "$base" \
    --model bench --api-key-env BENCH_KEY "${tools[@]}" --concurrency "$n" \
    >"$tmp/out" 2>"$tmp/err" ||
    { echo "bench_inflight: agentc batch failed: $(head -3 "$tmp/err")" >&2; exit 1; }
  [ "$(grep -c '"status":"completed"' "$tmp/out")" -eq "$(wc -l <"$1")" ] ||
    { echo "bench_inflight: not every session completed" >&2; exit 1; }
  cat "$tmp/time"
}
if [ "$mode" = slow ]; then
  read -r one _ < <(rss "$tmp/one.jsonl") || exit 1
  read -r all _ < <(rss "$tmp/in.jsonl") || exit 1
  awk -v n="$n" -v one="$one" -v all="$all" 'BEGIN {
    printf "sessions in flight at once: %d, each streaming ~10 s\n", n
    printf "  peak RSS: 1 session %.1f MB, %d sessions %.1f MB (target 24 MB: %s)\n", one / 1024, n, all / 1024, (all / 1024 <= 24 ? "met" : "NOT met")
    printf "  per in-flight session: %.1f KB ((RSS(n) - RSS(1)) / (n - 1))\n", (all - one) / (n - 1)
  }'
  exit 0
fi
read -r one _ < <(rss "$tmp/one.jsonl") || exit 1
rows=()
for _ in $(seq 1 "$runs"); do
  rows+=("$(rss "$tmp/in.jsonl")") || exit 1
done
echo "sessions in flight at once: $n, each 3 model calls answered after 1.5 s and 2 tool calls; $runs runs"
printf '%s\n' "${rows[@]}" | awk -v n="$n" -v one="$one" '{ r[NR] = $1; w[NR] = $2 / 4.5
    printf "  run %d: peak RSS %.1f MB, wall %.2f s (%.2fx the ideal 4.5 s)\n", NR, $1 / 1024, $2, $2 / 4.5 }
  END {
    for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++) {
      if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
      if (w[j] < w[i]) { t = w[i]; w[i] = w[j]; w[j] = t } }
    mr = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    mw = (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
    printf "  1 session: peak RSS %.1f MB\n", one / 1024
    printf "  peak RSS %.1f / %.1f / %.1f MB, wall / ideal %.2f / %.2f / %.2fx (min / median / max)\n", r[1] / 1024, mr / 1024, r[NR] / 1024, w[1], mw, w[NR]
    printf "  per in-flight session: %.1f KB at the median\n", (mr - one) / (n - 1)
    printf "  targets: peak RSS <= 24 MB: %s; wall <= 1.2x the ideal: %s\n", (mr / 1024 <= 24 ? "met" : "NOT met"), (mw <= 1.2 ? "met" : "NOT met")
  }'
