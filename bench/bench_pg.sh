#!/usr/bin/env bash
# The PostgreSQL store against the SQLite store, in one run, on a throwaway cluster
# (tests/store/pg_cluster.sh: 127.0.0.1, fsync off, as the tests run it):
#
# 1. Journal events appended per second from one process by group commits on the loop
#    (bench_pg_append: 8 sessions x 64 events a group), PostgreSQL / SQLite alternated
#    (target: >= 20,000 events/s on PostgreSQL).
# 2. CPU per turn, one worker: `agentc batch` of N sessions (default 300) at concurrency C
#    (default 50) against the loopback agentc_test_httpd --mode calc (3 LLM calls + 2
#    builtin:calculator calls a session, one turn each), stored on PostgreSQL (CPU of agentc
#    and of the server's processes together) and on SQLite (agentc's CPU), alternated RUNS
#    times (default 5). Prints each as ms per turn and the ratio as min / median / max.
#
#   bench/bench_pg.sh AGENTC AGENTC_TEST_HTTPD BENCH_PG_APPEND [N] [C] [RUNS]
#   (or: cmake --build BUILD --target bench_pg)
set -uo pipefail
agentc="$1" httpd="$2" append="$3" n="${4:-300}" conc="${5:-50}" runs="${6:-5}"
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
port=$((40000 + $$ % 10000))
dir="/tmp/agentc-bench-pg-$port"
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  bash "$here/tests/store/pg_cluster.sh" stop "$dir" "$port" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
bash "$here/tests/store/pg_cluster.sh" start "$dir" "$port" >/dev/null || exit 1
uri="postgresql://agentc:agentc-test-pw@127.0.0.1:$port/agentc"

echo "== 1. journal events appended per second (A: PostgreSQL, B: SQLite)"
"$append" "$uri?schema=bench_append" "$tmp/append.db" 100000 8 64 "$runs" || exit 1

"$httpd" --port-file "$tmp/port" --mode calc &
server_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { echo "bench_pg: server did not start" >&2; exit 1; }
base="http://127.0.0.1:$(cat "$tmp/port")/v1"
for i in $(seq 1 "$n"); do
  printf '{"id": %d, "prompt": "What is %d * 3, then %d + 7?"}\n' "$i" "$i" "$((i * 3))"
done >"$tmp/in.jsonl"

# the CPU seconds (user + sys) the cluster's processes used so far: the postmaster's own, its
# children's that ended (reaped: cutime, cstime) and those running
pg_cpu() {
  local pm tick
  pm=$(head -1 "$dir/data/postmaster.pid")
  tick=$(getconf CLK_TCK)
  { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat"
    for c in $(cat "/proc/$pm/task/$pm/children" 2>/dev/null); do
      awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null
    done; } | awk -v t="$tick" '{ s += $1 } END { printf "%.4f", s / t }'
}

# run pg|sqlite: the CPU seconds of one agentc batch (and the server's, on PostgreSQL)
run() {
  local db before after
  if [ "$1" = pg ]; then
    db="$uri?schema=bench_batch_$RANDOM$RANDOM"
  else
    rm -f "$tmp"/store.db*
    db="$tmp/store.db"
  fi
  before=$(pg_cpu)
  (BENCH_KEY=x "$agentc" batch "$tmp/in.jsonl" --base-url "$base" --model bench \
    --api-key-env BENCH_KEY --tools builtin:calculator --concurrency "$conc" --db "$db" \
    >"$tmp/out" 2>"$tmp/err" || { echo "bench_pg: agentc batch failed: $(head -3 "$tmp/err")" >&2; exit 1; }
   times >"$tmp/times") || exit 1
  sleep 0.5 # the server reaps the batch's backend
  after=$(pg_cpu)
  local ok
  ok=$(grep -c '"status":"completed"' "$tmp/out")
  [ "$ok" -eq "$n" ] || { echo "bench_pg: only $ok sessions completed" >&2; exit 1; }
  tail -n1 "$tmp/times" | awk -v pg="$1" -v b="$before" -v a="$after" '{ t = 0
    for (i = 1; i <= 2; i++) { split($i, x, /[ms]/); t += x[1] * 60 + x[2] }
    printf "%.4f %.4f", t + (pg == "pg" ? a - b : 0), t }'
}

run sqlite >/dev/null || exit 1 # warm
rows=()
for r in $(seq 1 "$runs"); do
  p=$(run pg) || exit 1
  s=$(run sqlite) || exit 1
  rows+=("$(awk -v a="${p% *}" -v own="${p#* }" -v b="${s% *}" -v n="$n" 'BEGIN { printf "%.2f %.3f %.3f %.3f", (b > 0 ? a / b : 0), a / n * 1000, b / n * 1000, own / n * 1000 }')")
done
echo "== 2. CPU per turn, one worker: agentc batch, $n sessions at concurrency $conc, 3 LLM calls + 2 tool calls a turn, $runs alternated runs"
printf '%s\n' "${rows[@]}" | sort -n | awk '{ r[NR] = $1; a[NR] = $2; b[NR] = $3; o[NR] = $4 } END {
  m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
  printf "  CPU per turn, PostgreSQL (agentc + server) / SQLite: %.2f / %.2f / %.2f (min / median / max)\n", r[1], m, r[NR]
  for (i = 1; i <= NR; i++) printf "    run: PostgreSQL %.3f ms (agentc alone %.3f ms), SQLite %.3f ms per turn\n", a[i], o[i], b[i]
  printf "RESULT cpu_ratio %.2f %.2f %.2f\n", r[1], m, r[NR]
}'
