#!/usr/bin/env bash
# What `agentc run` costs to start and answer one scripted turn (--provider script, no
# network): RUNS runs (default 30) of each mode, alternated, in one run of this script:
#   no-store  --no-store
#   store     a fresh session in a store (--db in a temporary directory), as the default
#             store is used; each run a new session in the same file
# Prints per mode the wall time per run (min / median / max), the CPU time (user + sys)
# per run (the total over the runs / RUNS) and, where strace is installed, the syscalls
# that wait for the disk (fsync, fdatasync) in one run. Target: wall <= 10 ms.
#
#   bench/bench_run_start.sh AGENTC [RUNS]
#   (or: cmake --build BUILD --target bench_run_start)
set -uo pipefail
agentc=$(realpath "$1") runs="${2:-30}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '{"content": "hello there"}\n' >"$tmp/script"

# one MODE K: runs agentc once, appends its wall time in ms to $tmp/MODE.wall
one() {
  local args=(--no-store)
  [ "$1" = store ] && args=(--db "$tmp/s.db" --session "s$2")
  local t0 t1
  t0=$(date +%s%N)
  "$agentc" run "${args[@]}" --provider script --script "$tmp/script" hi >"$tmp/out" 2>"$tmp/err" \
    || { echo "bench_run_start: agentc run failed: $(head -3 "$tmp/err")" >&2; exit 1; }
  t1=$(date +%s%N)
  grep -q '^hello there$' "$tmp/out" || { echo "bench_run_start: unexpected output" >&2; exit 1; }
  echo $(((t1 - t0) / 1000)) >>"$tmp/$1.wall"
}

# cpu MODE: the CPU seconds (user + sys) of RUNS runs of MODE (agentc's alone), from bash's
# times
cpu() {
  (for k in $(seq 1 "$runs"); do
     local args=(--no-store)
     [ "$1" = store ] && args=(--db "$tmp/s.db" --session "c$k")
     "$agentc" run "${args[@]}" --provider script --script "$tmp/script" hi >/dev/null 2>&1 || exit 1
   done
   times >"$tmp/times") || { echo "bench_run_start: agentc run failed" >&2; exit 1; }
  tail -n1 "$tmp/times" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.4f", t }'
}

one no-store 0 && one store 0 || exit 1 # the page cache warm, the store made
: >"$tmp/no-store.wall"
: >"$tmp/store.wall"
for k in $(seq 1 "$runs"); do
  one no-store "$k" && one store "$k" || exit 1
done
cpu_off=$(cpu no-store) && cpu_on=$(cpu store) || exit 1
echo "agentc run: start + one scripted turn, $runs alternated runs of each mode (load $(cut -d' ' -f1 /proc/loadavg))"
for mode in no-store store; do
  cpu_s=$cpu_off
  [ "$mode" = store ] && cpu_s=$cpu_on
  sort -n "$tmp/$mode.wall" | awk -v mode="$mode" -v cpu="$cpu_s" -v n="$runs" '{ w[NR] = $1 / 1000 } END {
    m = (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
    printf "  %-8s wall %.1f / %.1f / %.1f ms (min / median / max), CPU %.1f ms per run; target 10 ms wall: %s\n",
      mode, w[1], m, w[NR], cpu / n * 1000, (m <= 10 ? "met" : "NOT met")
  }'
done
if command -v strace >/dev/null; then
  for mode in no-store store; do
    args=(--no-store)
    [ "$mode" = store ] && args=(--db "$tmp/s.db" --session strace)
    strace -f -qq -e trace=fsync,fdatasync -o "$tmp/strace" "$agentc" run "${args[@]}" \
      --provider script --script "$tmp/script" hi >/dev/null 2>&1
    echo "  $mode: $(grep -c 'sync(' "$tmp/strace") fsync/fdatasync in one run"
  done
fi
