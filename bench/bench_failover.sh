#!/usr/bin/env bash
# bench/bench_failover.sh AGENTC [TURNS] [RUNS] - agentc serve as workers of one PostgreSQL
# database (a throwaway cluster, tests/store/pg_cluster.sh). (1) CPU per turn (agentc and
# PostgreSQL together) with 1, 2 and 3 workers, TURNS sessions of one turn each (a scripted
# model, a tool call and an answer) spread over the workers, against the same work on SQLite
# with one worker; RUNS alternated rounds, min/median/max. (2) Failover: FAILOVER_TRIALS
# (default 10) kill -9 trials of tests/server/workers.sh (leases of 1 s, heartbeat every
# 333 ms): the time from the kill to the first event of each affected session on a survivor.
# Prints figures, asserts nothing. FAILOVER_TRIALS=0 skips (2), TURNS=0 skips (1).
set -uo pipefail
agentc=$(realpath "$1")
TURNS=${2:-200}
RUNS=${3:-3}
TRIALS=${FAILOVER_TRIALS:-10}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
port=$((39000 + $$ % 500))
pgdir=/tmp/agentc-pg-bench-$port
uri="postgresql://agentc:agentc-test-pw@127.0.0.1:$port/agentc"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  bash "$src/tests/store/pg_cluster.sh" stop "$pgdir" "$port" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
bash "$src/tests/store/pg_cluster.sh" start "$pgdir" "$port" >/dev/null || exit 1
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
sql() { PGOPTIONS='-c client_min_messages=warning' "$bin/psql" -X -q -t -A -h "$pgdir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
stats() { sort -n | awk '{a[NR]=$1} END {printf "min %s  median %s  max %s (n %d)", a[1], a[int((NR+1)/2)], a[NR], NR}'; }
hz=$(getconf CLK_TCK)
# cpu PID...: user+system ticks of those processes
cpu() { for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null; done | awk '{s += $1} END {print s + 0}'; }
pg_pids() { ps -o pid= --ppid "$(head -1 "$pgdir/data/postmaster.pid")"; head -1 "$pgdir/data/postmaster.pid"; }
cat >"$tmp/tools.json" <<JSON
{"tools": [{"name": "note", "description": "notes", "command": ["sh", "-c", "cat >/dev/null; echo noted"]}]}
JSON
printf '%s\n' '{"content": "calling", "tool_calls": [{"id": "n1", "name": "note", "arguments": "{}"}]}' \
  '{"content": "done"}' >"$tmp/script"
# round DB N: TURNS sessions over N workers of DB; prints CPU ms per turn (agentc + PostgreSQL)
round() {
  local db=$1 n=$2 urls=() wp=()
  for w in $(seq 1 "$n"); do
    rm -f "$tmp/p$w"
    "$agentc" serve --db "$db" --worker-id "b$w" --listen 127.0.0.1:0 --port-file "$tmp/p$w" \
      --provider script --script "$tmp/script" --tools "$tmp/tools.json" \
      --sessions-per-token 1000000 --messages-per-minute 1000000 2>>"$tmp/err" &
    wp+=($!)
    pids+=($!)
  done
  for w in $(seq 1 "$n"); do
    for _ in $(seq 1 200); do [ -s "$tmp/p$w" ] && break; sleep 0.05; done
    urls+=("http://127.0.0.1:$(cat "$tmp/p$w")")
  done
  local pgp=()
  [[ $db == postgresql* ]] && pgp=($(pg_pids))
  local before=$(( $(cpu "${wp[@]}") + $(cpu "${pgp[@]}") ))
  for i in $(seq 1 "$TURNS"); do echo "${urls[$((i % n))]} s$i"; done |
    xargs -P 8 -n 2 sh -c 'curl -s -o /dev/null -H "Content-Type: application/json" -d "{\"id\": \"$1\"}" "$0/v1/sessions" &&
      curl -s -o /dev/null -H "Content-Type: application/json" -d "{\"content\": \"go\"}" "$0/v1/sessions/$1/messages"'
  # wait until every turn is done, read from the store by another process (its CPU and its
  # database connection's are not counted: the processes are those of the start)
  local done_n=0
  for _ in $(seq 1 1200); do
    done_n=$("$agentc" sessions list --db "$db" --json 2>/dev/null |
      jq -s '[.[] | select(.at_rest and .title == "go")] | length')
    [ "$done_n" = "$TURNS" ] && break
    sleep 0.2
  done
  [ "$done_n" = "$TURNS" ] || echo "only $done_n of $TURNS turns finished ($db, $n workers)" >&2
  local after=$(( $(cpu "${wp[@]}") + $(cpu "${pgp[@]}") ))
  for p in "${wp[@]}"; do kill -TERM "$p"; wait "$p" 2>/dev/null; done
  awk -v d=$((after - before)) -v hz="$hz" -v t="$TURNS" 'BEGIN {printf "%.3f\n", d * 1000 / hz / t}'
}
if [ "$TURNS" -gt 0 ]; then
  echo "CPU per turn (agentc + PostgreSQL), $TURNS sessions of one turn (a tool call), $RUNS rounds"
  for r in $(seq 1 "$RUNS"); do
    rm -f "$tmp/s.db"*
    round "$tmp/s.db" 1 >>"$tmp/sqlite"
    for n in 1 2 3; do
      sql "DROP SCHEMA IF EXISTS b$r$n CASCADE"
      round "$uri?schema=b$r$n" "$n" >>"$tmp/pg$n"
    done
  done
  printf '  SQLite, 1 worker:         %s ms\n' "$(stats <"$tmp/sqlite")"
  for n in 1 2 3; do
    printf '  PostgreSQL, %d worker(s): %s ms\n' "$n" "$(stats <"$tmp/pg$n")"
  done
fi
if [ "$TRIALS" -gt 0 ]; then
  echo "Failover: kill -9 of the worker running turns, $TRIALS trials, lease 1000 ms (heartbeat 333 ms)"
  FAILOVER_OUT="$tmp/failover" bash "$src/tests/server/workers.sh" "$agentc" "$uri" "$pgdir" "$port" "$TRIALS" >/dev/null ||
    { echo "the failover trials failed"; exit 1; }
  printf '  kill -9 to the first event on a survivor: %s ms\n' "$(stats <"$tmp/failover")"
  awk '{ if ($1 <= 1333) ok++ } END {printf "  within lease + one heartbeat (1333 ms): %d of %d\n", ok, NR}' "$tmp/failover"
fi
