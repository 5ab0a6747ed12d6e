#!/usr/bin/env bash
# workers_pg_outage.sh AGENTC URI CLUSTER_DIR PORT: an `agentc serve` worker whose database
# cannot be reached (its connections cut, then every packet held by bench/loop_stall.mjs's
# proxy, so a new connection neither fails nor succeeds). A request that needs the store's own
# connection (GET /v1/workers) is answered 503 store_error at once, never waiting on the loop
# for the connection made again (up to connect_timeout): /healthz answers at once meanwhile,
# /readyz says not ready, and agentc_store_blocking_statements_total{kind="connect"} stays 0.
# The database back, the connection is made again in the background: the worker is ready,
# /v1/workers answers, and a message runs its turn on the session made before (nothing of it
# lost).
set -uo pipefail
agentc=$1 uri=$2 dir=$3 port=$4
command -v curl >/dev/null && command -v jq >/dev/null && command -v node >/dev/null ||
  { echo "SKIP: curl, jq and node needed"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (workers_pg_outage.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 8 "$tmp/w.err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
sql() { PGOPTIONS='-c client_min_messages=warning' "$psql" -X -q -t -A -h "$dir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
sql "DROP SCHEMA IF EXISTS outage CASCADE" || fail "psql"
. "$here/../support/pg_proxy.sh"
echo 0 >"$tmp/delay"
start_proxy "$port" "$tmp/delay"; pids+=("$proxy")
kill -0 "$proxy" 2>/dev/null || fail "no port for the proxy"
for _ in $(seq 1 10); do echo '{"content": "hi"}'; done >"$tmp/script"
"$agentc" serve --db "${uri/:$port\//:$pport/}?schema=outage" --provider script --script "$tmp/script" \
  --listen 127.0.0.1:0 --port-file "$tmp/port" --lease-ms 3000 2>"$tmp/w.err" &
wpid=$!
pids+=("$wpid")
wait_for test -s "$tmp/port" || fail "the worker did not start"
u=http://127.0.0.1:$(cat "$tmp/port")
j() { curl -s --max-time 30 -H 'Content-Type: application/json' "$@"; }
metric() { curl -s --max-time 10 "$u/metrics" | awk -v k="$1" '$1 == k {print $2}'; }
connects() { metric 'agentc_store_blocking_statements_total{kind="connect"}'; }
j -X POST -d '{"id": "a"}' "$u/v1/sessions" | jq -e '.id == "a"' >/dev/null || fail "create"
[ "$(j -X POST -d '{"content": "one"}' "$u/v1/sessions/a/messages" -o /dev/null -w '%{http_code}')" = 202 ] || fail "first message"
idle() { j "$u/v1/sessions/a" | jq -e '.status == "idle" and (.messages | length) == 2' >/dev/null; }
wait_for idle || fail "the first turn: $(j "$u/v1/sessions/a" | jq -c '{status, messages}')"
[ "$(j "$u/v1/workers" -o /dev/null -w '%{http_code}')" = 200 ] || fail "/v1/workers before the outage"
[ "$(connects)" = 0 ] || fail "connections made again waiting before the outage: $(connects)"

# ---- the outage: the worker's connections cut, every new one held (never answered) ----------
kill -9 "$proxy"
wait "$proxy" 2>/dev/null
echo 600000 >"$tmp/hold"
node "$root/bench/loop_stall.mjs" proxy "$pport" "$port" 600000 "$tmp/hold" &
proxy=$!
pids+=("$proxy")
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null && break; sleep 0.05; done
# a request that reads the store on its own connection, and /healthz sent meanwhile
: >"$tmp/order"
t0=$(date +%s%N)
{ out=$(j "$u/v1/workers" -w '\n%{http_code}'); echo "$(( ($(date +%s%N) - t0) / 1000000 ))" >"$tmp/ms"; echo "$out" >"$tmp/out"; } &
p=$!
sleep 0.2
h0=$(date +%s%N)
j "$u/healthz" | jq -e '.status == "ok"' >/dev/null || fail "/healthz during the outage"
hms=$((($(date +%s%N) - h0) / 1000000))
wait "$p"
[ "$(tail -1 "$tmp/out")" = 503 ] && head -1 "$tmp/out" | jq -e '.error.code == "store_error"' >/dev/null \
  || fail "/v1/workers during the outage: $(cat "$tmp/out")"
[ "$(cat "$tmp/ms")" -lt 1000 ] || fail "/v1/workers answered after $(cat "$tmp/ms") ms (it waited for the connection)"
[ "$hms" -lt 500 ] || fail "/healthz took $hms ms during the outage"
# again while the connection is being made in the background: at once too
t0=$(date +%s%N)
out=$(j "$u/v1/workers" -w '\n%{http_code}')
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$(tail -1 <<<"$out")" = 503 ] && [ "$ms" -lt 1000 ] || fail "/v1/workers again: $out after $ms ms"
notready() { [ "$(j "$u/readyz" -o /dev/null -w '%{http_code}')" = 503 ]; }
wait_for notready || fail "/readyz during the outage: $(j "$u/readyz")"
[ "$(connects)" = 0 ] || fail "the connection made again waiting on the loop: $(connects) times"

# ---- the database reachable again: the connection made again in the background ---------------
kill -9 "$proxy"
wait "$proxy" 2>/dev/null
start_proxy_at() { # the proxy on the worker's port again, holding nothing
  node "$root/bench/loop_stall.mjs" proxy "$pport" "$port" 0 &
  proxy=$!
  pids+=("$proxy")
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null && return 0; sleep 0.05; done
  return 1
}
start_proxy_at || fail "the proxy did not listen again"
ready() { [ "$(j "$u/readyz" -o /dev/null -w '%{http_code}')" = 200 ]; }
wait_for ready || fail "not ready once the database is back: $(j "$u/readyz")"
workers() { [ "$(j "$u/v1/workers" -o /dev/null -w '%{http_code}')" = 200 ]; }
wait_for workers || fail "/v1/workers once the database is back: $(j "$u/v1/workers")"
out=$(j -X POST -d '{"content": "two", "if_busy": "enqueue"}' "$u/v1/sessions/a/messages" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 202 ] || fail "a message once the database is back: $out"
done2() { j "$u/v1/sessions/a" | jq -e '.status == "idle" and ([.messages[] | select(.role == "user") | .content] == ["one", "two"])' >/dev/null; }
wait_for done2 || fail "the turn after the outage: $(j "$u/v1/sessions/a" | jq -c '{status, messages}')"
stored() { [ "$(sql "SELECT count(*) FROM outage.events WHERE session = 'local/a' AND ev IN ('user_message', 'llm.completed')")" = 4 ]; }
wait_for stored || fail "both turns are not stored: $(sql "SELECT ev FROM outage.events WHERE session = 'local/a' ORDER BY n")"
[ "$(connects)" = 0 ] || fail "the connection made again waiting on the loop: $(connects) times"
kill -TERM "$wpid"
wait "$wpid" || fail "the worker's exit status"
grep -q agentc-test-pw "$tmp/w.err" && fail "the worker printed the password"
sql "DROP SCHEMA IF EXISTS outage CASCADE"
echo "workers_pg_outage: ok"
