#!/usr/bin/env bash
# bench/bench_serve.sh AGENTC [CLIENTS] [RUNS] - agentc serve under N concurrent SSE clients on
# N live sessions streaming from a scripted model (bench/serve_clients.mjs): server RSS, CPU
# per delivered event, p50/p99 delay from an event's append to the client receiving it; the
# same work (N sessions, same script) through `agentc batch` in the same run as the CPU
# baseline; the store's file size per turn (DBTURNS sessions of one turn, default 100); then
# 10,000 stored sessions: RSS and the time to load one. min/median/max over RUNS. Prints
# figures, asserts nothing. CLIENTS 0 skips the first part, DBTURNS=0 the second, STORED=0
# the third; SERVE_DB=1 runs the first part with --db. With BARE (bench_mhd_sse, a bare
# libmicrohttpd SSE sender of the same events), each run also measures its delays with the
# same clients, and the ratios serve / bare of p50 and p99 are printed (target 2x).
#   bench/bench_serve.sh AGENTC [CLIENTS] [RUNS] [BARE]
set -uo pipefail
agentc=$(realpath "$1")
N=${2:-1000}
RUNS=${3:-3}
BARE=${4:-}
STORED=${STORED:-10000}
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
text=$(printf 'token%d ' $(seq 1 60))
jq -cn --arg t "$text" '{content: $t, usage: {input: 10, output: 60}}' >"$tmp/script"
start() {
  rm -f "$tmp/port"
  "$agentc" serve --provider script --script "$tmp/script" --listen 127.0.0.1:0 --port-file "$tmp/port" \
    --max-connections $((N * 2 + 100)) --sessions-per-token $((STORED + N)) --messages-per-minute 1000000 \
    --streams-per-token $((N + 100)) "$@" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 1 200); do [ -s "$tmp/port" ] && break; sleep 0.05; done
  [ -s "$tmp/port" ] || { echo "server did not start: $(cat "$tmp/err")"; exit 1; }
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
stop() { kill -TERM "$pid"; wait "$pid"; pid=; }
stats() { sort -n | awk '{a[NR]=$1} END {printf "min %s  median %s  max %s", a[1], a[int((NR+1)/2)], a[NR]}'; }
seq 1 "$N" | jq -c '{id: ("p" + tostring), prompt: "go"}' >"$tmp/prompts"
if [ "$N" -gt 0 ]; then
echo "agentc serve: $N concurrent SSE clients, one live session each, $RUNS runs"
for r in $(seq 1 "$RUNS"); do
  rm -f "$tmp/c.db"*
  start --script-delay-ms 20 ${SERVE_DB:+--db "$tmp/c.db"}
  node "$dir/serve_clients.mjs" "$url" "$pid" "$N" >>"$tmp/serve.jsonl" || { cat "$tmp/err"; exit 1; }
  stop
  # the baseline: the same sessions and turns through agentc batch, all at once
  ( bash -c '"$@" >/dev/null; times' _ "$agentc" batch "$tmp/prompts" --provider script --script "$tmp/script" \
      --concurrency "$N" ) 2>/dev/null | tail -n1 >"$tmp/times"
  read -r u s <"$tmp/times"
  ms() { echo "$1" | awk -F'[ms]' '{printf "%.1f", ($1 * 60 + $2) * 1000}'; }
  echo "$(ms "$u") $(ms "$s")" | awk '{print $1 + $2}' >>"$tmp/batch_cpu"
  [ -n "$BARE" ] || continue
  # the floor: the same clients on a bare libmicrohttpd sender of the same events
  rm -f "$tmp/bare_port"
  "$BARE" "$tmp/bare_port" "$(jq -s '.[0].events_per_session' "$tmp/serve.jsonl")" 20 &
  pid=$!
  for _ in $(seq 1 200); do [ -s "$tmp/bare_port" ] && break; sleep 0.05; done
  node "$dir/serve_clients.mjs" "http://127.0.0.1:$(cat "$tmp/bare_port")" "$pid" "$N" >>"$tmp/bare.jsonl" ||
    { echo "the bare sender's clients failed"; exit 1; }
  kill "$pid"; wait "$pid" 2>/dev/null; pid=
done
per_session=$(jq -s '.[0].events_per_session' "$tmp/serve.jsonl")
echo "  events per session (delivered): $per_session"
echo "  server CPU per delivered event (us): $(jq '.cpu_us_per_event' "$tmp/serve.jsonl" | stats)"
awk -v n="$N" -v e="$per_session" '{printf "%.2f\n", $1 * 1000 / (n * e)}' "$tmp/batch_cpu" >"$tmp/batch_per"
echo "  agentc batch CPU per event, same work (us): $(stats <"$tmp/batch_per")"
paste <(jq '.cpu_us_per_event' "$tmp/serve.jsonl") "$tmp/batch_per" | awk '{printf "%.2f\n", $1 / $2}' >"$tmp/ratio"
echo "  ratio serve / batch: $(stats <"$tmp/ratio")"
echo "  append-to-client delay p50 (ms): $(jq '.p50_ms' "$tmp/serve.jsonl" | stats)"
echo "  append-to-client delay p99 (ms): $(jq '.p99_ms' "$tmp/serve.jsonl" | stats)"
echo "  server RSS with $N streams (MB): $(jq '.rss_kb / 1024 | floor' "$tmp/serve.jsonl" | stats)"
if [ -n "$BARE" ]; then
  echo "  bare libmicrohttpd sender, the same clients: p50 (ms) $(jq '.p50_ms' "$tmp/bare.jsonl" | stats)"
  echo "  bare libmicrohttpd sender, the same clients: p99 (ms) $(jq '.p99_ms' "$tmp/bare.jsonl" | stats)"
  # the floor of a server's CPU per event: one send each, nothing else
  echo "  bare libmicrohttpd sender, CPU per delivered event (us): $(jq '.cpu_us_per_event' "$tmp/bare.jsonl" | stats)"
  paste "$tmp/batch_per" <(jq '.cpu_us_per_event' "$tmp/bare.jsonl") | awk '{printf "%.2f\n", $2 / $1}' >"$tmp/bratio"
  echo "  ratio bare sender / batch: $(stats <"$tmp/bratio")"
  for q in p50 p99; do
    paste <(jq ".${q}_ms" "$tmp/serve.jsonl") <(jq ".${q}_ms" "$tmp/bare.jsonl") |
      awk '{printf "%.2f\n", ($2 > 0 ? $1 / $2 : 0)}' >"$tmp/dratio"
    echo "  delay ratio serve / bare, $q: $(stats <"$tmp/dratio") (target 2x)"
  done
fi
fi

if [ "${DBTURNS:=100}" -gt 0 ]; then
echo "agentc serve --db: store file size per turn ($DBTURNS sessions, one turn each), $RUNS runs"
for r in $(seq 1 "$RUNS"); do
  rm -f "$tmp/t.db"*
  start --db "$tmp/t.db"
  for i in $(seq 1 "$DBTURNS"); do
    curl -s -o /dev/null -H 'Content-Type: application/json' -X POST -d "{\"id\": \"t$i\"}" "$url/v1/sessions"
    curl -s -o /dev/null -H 'Content-Type: application/json' -X POST -d '{"content": "go"}' "$url/v1/sessions/t$i/messages"
  done
  for _ in $(seq 1 600); do
    busy=$(curl -s "$url/v1/sessions?limit=1000" | jq '[.data[] | select(.status != "idle")] | length')
    [ "$busy" = 0 ] && break
    sleep 0.1
  done
  stop
  echo $(( $(du -cb "$tmp/t.db"* | tail -n1 | cut -f1) / DBTURNS )) >>"$tmp/perturn"
done
echo "  store bytes per turn (file and WAL after the stop): $(stats <"$tmp/perturn")"
fi

[ "$STORED" -gt 0 ] || exit 0
echo "agentc serve --db: $STORED stored sessions"
start --db "$tmp/s.db"
t0=$(date +%s%N)
node "$dir/serve_create.mjs" "$url" "$STORED" || { cat "$tmp/err"; exit 1; }
echo "  created in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
stop
start --db "$tmp/s.db"
rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status")
for i in 1 2 3 4 5; do
  curl -s -o /dev/null -w '%{time_total}\n' "$url/v1/sessions/k$((i * 997))" | awk '{printf "%.2f\n", $1 * 1000}' >>"$tmp/load"
  curl -s -o /dev/null -w '%{time_total}\n' "$url/v1/sessions/k$((i * 997))" | awk '{printf "%.2f\n", $1 * 1000}' >>"$tmp/loaded"
done
echo "  server RSS with $STORED known, none loaded (MB): $rss"
echo "  GET of a stored session, first (loads it) (ms): $(stats <"$tmp/load")"
echo "  GET of the same session, loaded (ms): $(stats <"$tmp/loaded")"
stop
