#!/usr/bin/env bash
# bench/bench_loop_stall.sh AGENTC [DELAY_MS] [SECONDS] [RUNS] - the longest stall of an
# `agentc serve` worker's loop while its PostgreSQL database answers slowly: every packet
# between it and the database held DELAY_MS (default 50) by a proxy (bench/loop_stall.mjs), so
# each round trip takes 2 x DELAY_MS more. Two workers on one store (a throwaway cluster,
# tests/store/pg_cluster.sh), leases of 1 s (a heartbeat and a claim every 333 ms): A runs a
# session turn after turn; B, behind the proxy, streams it (its journal read from the store on
# each wake-up) and, in the second phase, forwards messages to it; in the third it lists the
# sessions (GET /v1/sessions) one request after another; in the fourth it is asked for the view
# of a session A has just created (its first read of it); in the fifth it opens streams of the
# session one after another (each one's catch-up read from the store, then closed); in the sixth
# it creates sessions and deletes them, one after another (their rows made and removed). /healthz
# on B, answered on its loop,
# is asked one request after another for SECONDS (default 6) per phase: its p50, p99 and longest
# answer are B's loop stalls. min/median/max over RUNS (default 3). Prints figures,
# asserts nothing.
set -uo pipefail
agentc=$(realpath "$1")
D=${2:-50}
S=${3:-6}
RUNS=${4:-3}
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
port=$((23000 + RANDOM % 2000)) # below the tests' ports (30000-49999)
pport=$((port + 2500))
pgdir=/tmp/agentc-bench-pg-$port
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  bash "$dir/../tests/store/pg_cluster.sh" stop "$pgdir" "$port" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
bash "$dir/../tests/store/pg_cluster.sh" start "$pgdir" "$port" >/dev/null || exit 1
node "$dir/loop_stall.mjs" proxy "$pport" "$port" "$D" &
pids+=($!)
text=$(printf 'token%d ' $(seq 1 20))
for _ in $(seq 1 400); do jq -cn --arg t "$text" '{content: $t}'; done >"$tmp/script"
start() { # start N PORT SCHEMA: worker N on the database at PORT, its URL in u$N
  rm -f "$tmp/port$1"
  "$agentc" serve --db "postgresql://agentc:agentc-test-pw@127.0.0.1:$2/agentc?schema=$3" \
    --provider script --script "$tmp/script" --script-delay-ms 5 --lease-ms 1000 \
    --listen 127.0.0.1:0 --port-file "$tmp/port$1" --messages-per-minute 1000000 \
    --forward-timeout-ms 20000 2>"$tmp/w$1.err" &
  pids+=($!)
  eval "pid$1=$!"
  for _ in $(seq 1 400); do [ -s "$tmp/port$1" ] && break; sleep 0.05; done
  [ -s "$tmp/port$1" ] || { echo "worker $1 did not start: $(cat "$tmp/w$1.err")"; exit 1; }
  eval "u$1=http://127.0.0.1:$(cat "$tmp/port$1")"
}
j() { curl -s --max-time 30 -H 'Content-Type: application/json' "$@"; }
turns() { # turns URL SECONDS: one message after another to session s through URL
  local end=$((SECONDS + $2))
  while [ "$SECONDS" -lt "$end" ]; do
    j -X POST -d '{"content": "go", "if_busy": "enqueue"}' "$1/v1/sessions/s/messages" >/dev/null
    sleep 0.1
  done
}
lists() { # lists URL SECONDS: GET /v1/sessions one after another
  local end=$((SECONDS + $2))
  while [ "$SECONDS" -lt "$end" ]; do j "$1/v1/sessions" >/dev/null; sleep 0.05; done
}
views() { # views RUN SECONDS: a session created on A, then its view asked of B
  local end=$((SECONDS + $2)) i=0
  while [ "$SECONDS" -lt "$end" ]; do
    i=$((i + 1))
    j -X POST -d "{\"id\": \"v$1-$i\"}" "$u1/v1/sessions" >/dev/null
    j "$u2/v1/sessions/v$1-$i" >/dev/null
  done
}
opens() { # opens SECONDS: a stream of s opened on B (caught up), read 0.5 s, closed, and again
  local end=$((SECONDS + $1))
  while [ "$SECONDS" -lt "$end" ]; do curl -s -N --max-time 0.5 "$u2/v1/sessions/s/events" >/dev/null; done
}
churn() { # churn URL SECONDS: a session created, then deleted, one after another
  local end=$((SECONDS + $2)) id
  while [ "$SECONDS" -lt "$end" ]; do
    id=$(j -X POST -d '{}' "$1/v1/sessions" | jq -r .id)
    j -X DELETE "$1/v1/sessions/$id" >/dev/null
  done
}
stats() { sort -n | awk '{a[NR]=$1} END {printf "min %s  median %s  max %s", a[1], a[int((NR+1)/2)], a[NR]}'; }
echo "agentc serve: B's loop while its database answers $D ms late each way, ${S} s a phase, $RUNS runs"
for r in $(seq 1 "$RUNS"); do
  start 1 "$port" "stall$r"
  start 2 "$pport" "stall$r"
  j -X POST -d '{"id": "s"}' "$u1/v1/sessions" >/dev/null
  curl -s -N --max-time $((2 * S + 30)) "$u2/v1/sessions/s/events" >"$tmp/stream" &
  pids+=($!)
  for _ in $(seq 1 200); do [ -s "$tmp/stream" ] && break; sleep 0.05; done # open: caught up
  sleep 1
  turns "$u1" "$S" &
  node "$dir/loop_stall.mjs" probe "$u2/healthz" $((S * 1000)) | jq -c '{phase: "stream"} + .' >>"$tmp/all.jsonl"
  wait %turns 2>/dev/null
  turns "$u2" "$S" &
  node "$dir/loop_stall.mjs" probe "$u2/healthz" $((S * 1000)) | jq -c '{phase: "forward"} + .' >>"$tmp/all.jsonl"
  wait %turns 2>/dev/null
  lists "$u2" "$S" &
  node "$dir/loop_stall.mjs" probe "$u2/healthz" $((S * 1000)) | jq -c '{phase: "list"} + .' >>"$tmp/all.jsonl"
  wait %lists 2>/dev/null
  views "$r" "$S" &
  node "$dir/loop_stall.mjs" probe "$u2/healthz" $((S * 1000)) | jq -c '{phase: "view"} + .' >>"$tmp/all.jsonl"
  wait %views 2>/dev/null
  opens "$S" &
  node "$dir/loop_stall.mjs" probe "$u2/healthz" $((S * 1000)) | jq -c '{phase: "open"} + .' >>"$tmp/all.jsonl"
  wait %opens 2>/dev/null
  churn "$u2" "$S" &
  node "$dir/loop_stall.mjs" probe "$u2/healthz" $((S * 1000)) | jq -c '{phase: "churn"} + .' >>"$tmp/all.jsonl"
  wait %churn 2>/dev/null
  kill -9 "$pid1" "$pid2"
  wait "$pid1" "$pid2" 2>/dev/null
done
for ph in stream forward list view open churn; do
  for k in p50_ms p99_ms max_ms; do
    printf '%-8s %-7s %s\n' "$ph" "$k" "$(jq "select(.phase == \"$ph\") | .$k" "$tmp/all.jsonl" | stats)"
  done
done
