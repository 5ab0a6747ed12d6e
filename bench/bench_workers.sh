#!/usr/bin/env bash
# bench/bench_workers.sh AGENTC [SESSIONS] [TURNS] [RUNS] - two `agentc serve` workers on one
# PostgreSQL store (a throwaway cluster, tests/store/pg_cluster.sh): SESSIONS sessions (default
# 50) run by the first, each streamed on both while it runs TURNS turns (default 4) of a
# scripted model (bench/workers_clients.mjs). Reports, min/median/max over RUNS (default 3): the
# SSE delivery delay p50/p99 on the holder and on the other worker (from the frame's event being
# applied to the client receiving it), and the holder's notifying commits per second (at most
# one per 10 ms interval: 100/s) against the journal commits it told (one notification each
# without coalescing). Prints figures, asserts nothing.
set -uo pipefail
agentc=$(realpath "$1")
N=${2:-50}
T=${3:-4}
RUNS=${4:-3}
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
port=$((41000 + RANDOM % 2000))
pgdir=/tmp/agentc-bench-pg-$port # the server's user reaches it (a mktemp folder is private)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  bash "$dir/../tests/store/pg_cluster.sh" stop "$pgdir" "$port" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM # the cluster stopped when interrupted too
bash "$dir/../tests/store/pg_cluster.sh" start "$pgdir" "$port" >/dev/null || exit 1
db="postgresql://agentc:agentc-test-pw@127.0.0.1:$port/agentc"
text=$(printf 'token%d ' $(seq 1 40))
for _ in $(seq 1 "$T"); do jq -cn --arg t "$text" '{content: $t}'; done >"$tmp/script" # a turn a line
start() { # start N SCHEMA: worker N, its URL in u$N
  rm -f "$tmp/port$1"
  "$agentc" serve --db "$db?schema=$2" --provider script --script "$tmp/script" --script-delay-ms 10 \
    --listen 127.0.0.1:0 --port-file "$tmp/port$1" --messages-per-minute 1000000 2>"$tmp/w$1.err" &
  pids+=($!)
  eval "pid$1=$!"
  for _ in $(seq 1 200); do [ -s "$tmp/port$1" ] && break; sleep 0.05; done
  [ -s "$tmp/port$1" ] || { echo "worker $1 did not start: $(cat "$tmp/w$1.err")"; exit 1; }
  eval "u$1=http://127.0.0.1:$(cat "$tmp/port$1")"
}
stats() { sort -n | awk '{a[NR]=$1} END {printf "min %s  median %s  max %s", a[1], a[int((NR+1)/2)], a[NR]}'; }
echo "agentc serve: 2 workers on PostgreSQL, $N sessions x $T turns streamed on both, $RUNS runs"
for r in $(seq 1 "$RUNS"); do
  start 1 "bench$r"
  start 2 "bench$r"
  node "$dir/workers_clients.mjs" "$u1" "$u2" "$N" "$T" >"$tmp/run.json" || { cat "$tmp"/w*.err; exit 1; }
  kill -TERM "$pid1" "$pid2"
  wait "$pid1" "$pid2"
  line=$(grep "wake-ups:" "$tmp/w1.err")
  commits=$(awk '{print $4}' <<<"$line")
  told=$(awk '{print $8}' <<<"$line")
  jq -c --argjson c "$commits" --argjson t "$told" '. + {notify_commits: $c, notifications: $t,
    commits_per_s: ($c * 1000 / .ms), told_per_s: ($t * 1000 / .ms)}' "$tmp/run.json" >>"$tmp/all.jsonl"
done
for k in local_p50_ms local_p99_ms remote_p50_ms remote_p99_ms commits_per_s told_per_s; do
  printf '%-15s %s\n' "$k" "$(jq ".$k" "$tmp/all.jsonl" | stats)"
done
