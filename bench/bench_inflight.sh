#!/usr/bin/env bash
# Memory of many sessions in flight at once: agentc batch of N sessions (default
# 1,000) all at once (concurrency N) against agentc_test_httpd --mode calc
# answering each slowly (prompt SLOW: 100 words, one per 100 ms, ~10 s a
# session), so every session holds an open stream at the peak. Prints the
# process's peak RSS, beside the same command with one session (the baseline
# measured in the same run), and the difference per session.
#
#   bench/bench_inflight.sh AGENTC AGENTC_TEST_HTTPD [N]
set -uo pipefail
agentc="$1" httpd="$2" n="${3:-1000}"
[ -x /usr/bin/time ] || { echo "bench_inflight: needs /usr/bin/time (GNU time)" >&2; exit 1; }
tmp=$(mktemp -d)
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
"$httpd" --port-file "$tmp/port" --mode calc &
server_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { echo "bench_inflight: server did not start" >&2; exit 1; }
base="http://127.0.0.1:$(cat "$tmp/port")/v1"
for i in $(seq 1 "$n"); do printf '{"id": %d, "prompt": "SLOW story %d"}\n' "$i" "$i"; done >"$tmp/in.jsonl"
head -n1 "$tmp/in.jsonl" >"$tmp/one.jsonl"
rss() { # INPUT: peak RSS in KB
  BENCH_KEY=x /usr/bin/time -f "%M" -o "$tmp/time" "$agentc" batch "$1" --base-url "$base" \
    --model bench --api-key-env BENCH_KEY --concurrency "$n" >"$tmp/out" 2>"$tmp/err" ||
    { echo "bench_inflight: agentc batch failed: $(head -3 "$tmp/err")" >&2; exit 1; }
  [ "$(grep -c '"status":"completed"' "$tmp/out")" -eq "$(wc -l <"$1")" ] ||
    { echo "bench_inflight: not every session completed" >&2; exit 1; }
  cat "$tmp/time"
}
one=$(rss "$tmp/one.jsonl") || exit 1
all=$(rss "$tmp/in.jsonl") || exit 1
awk -v n="$n" -v one="$one" -v all="$all" 'BEGIN {
  printf "sessions in flight at once: %d, each streaming ~10 s\n", n
  printf "  peak RSS: 1 session %.1f MB, %d sessions %.1f MB (target 20 MB: %s)\n", one / 1024, n, all / 1024, (all / 1024 <= 20 ? "met" : "NOT met")
  printf "  per in-flight session: %.1f KB ((RSS(n) - RSS(1)) / (n - 1))\n", (all - one) / (n - 1)
}'
