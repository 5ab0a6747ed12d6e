#!/usr/bin/env bash
# workers_pg_slow.sh AGENTC URI CLUSTER_DIR PORT: two `agentc serve` workers on one PostgreSQL
# store, the second one's database answering slowly (every packet held 250 ms each way by
# bench/loop_stall.mjs's proxy once both run). The second one's requests that read the store
# for what the first one did (the view of a session the first created, the list, a create of an
# id the first has) wait for it suspended: a /healthz sent after each of them is answered before
# it (its loop runs meanwhile), and each is then answered as it would be at once (the list's
# views, of the rows it read, name the worker running each session).
set -uo pipefail
agentc=$1 uri=$2 dir=$3 port=$4
command -v curl >/dev/null && command -v jq >/dev/null && command -v node >/dev/null ||
  { echo "SKIP: curl, jq and node needed"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (workers_pg_slow.sh:${BASH_LINENO[0]}): $*" >&2; for f in "$tmp"/*.err; do tail -n 5 "$f" >&2; done; exit 1; }
wait_for() { for _ in $(seq 1 300); do "$@" && return 0; sleep 0.05; done; return 1; }
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
sql() { PGOPTIONS='-c client_min_messages=warning' "$psql" -X -q -t -A -h "$dir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
sql "DROP SCHEMA IF EXISTS slowdb CASCADE" || fail "psql"
pport=$((port + 1000 + RANDOM % 1000))
node "$here/../../bench/loop_stall.mjs" proxy "$pport" "$port" 0 "$tmp/delay" &
pids+=($!)
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null && break; sleep 0.05; done
echo '{"content": "hi"}' >"$tmp/script"
start() { # start N DB_PORT: worker N, its URL in u$N
  rm -f "$tmp/port$1"
  "$agentc" serve --db "${uri/:$port\//:$2/}?schema=slowdb" --provider script --script "$tmp/script" \
    --listen 127.0.0.1:0 --port-file "$tmp/port$1" --forward-timeout-ms 20000 2>"$tmp/w$1.err" &
  pids+=($!)
  wait_for test -s "$tmp/port$1" || fail "worker $1 did not start"
  eval "u$1=http://127.0.0.1:$(cat "$tmp/port$1")"
}
start 1 "$port"
start 2 "$pport"
j() { curl -s --max-time 30 -H 'Content-Type: application/json' "$@"; }
j -X POST -d '{"id": "a"}' "$u1/v1/sessions" | jq -e '.id == "a"' >/dev/null || fail "create on 1"
echo 250 >"$tmp/delay" # from now on each of 2's reads takes 500 ms more
sleep 1                # what was under way has passed
# first REQUEST on 2 (curl arguments), then /healthz on 2: the order of their answers in order
first() {
  : >"$tmp/order"
  { out=$(j -w '\n%{http_code}' "$@"); echo "request" >>"$tmp/order"; echo "$out" >"$tmp/out"; } &
  local p=$!
  sleep 0.2
  j "$u2/healthz" | jq -e '.status == "ok"' >/dev/null && echo "healthz" >>"$tmp/order"
  wait "$p"
  [ "$(tr '\n' ' ' <"$tmp/order")" = "healthz request " ] || fail "answered in the order $(cat "$tmp/order") for $*"
}
first "$u2/v1/sessions/a"
[ "$(tail -1 "$tmp/out")" = 200 ] && head -1 "$tmp/out" | jq -e '.id == "a"' >/dev/null ||
  fail "the view of a from 2: $(cat "$tmp/out")"
j -X POST -d '{"id": "b"}' "$u1/v1/sessions" | jq -e '.id == "b"' >/dev/null || fail "create b on 1"
first "$u2/v1/sessions"
[ "$(tail -1 "$tmp/out")" = 200 ] && head -1 "$tmp/out" | jq -e '[.data[] | select(.id == "b" and .worker != null and .loaded == false)] | length == 1' >/dev/null ||
  fail "the list on 2 without b: $(cat "$tmp/out")"
j -X POST -d '{"id": "c"}' "$u1/v1/sessions" | jq -e '.id == "c"' >/dev/null || fail "create c on 1"
first -X POST -d '{"id": "c"}' "$u2/v1/sessions"
[ "$(tail -1 "$tmp/out")" = 409 ] && head -1 "$tmp/out" | jq -e '.error.code == "session_exists"' >/dev/null ||
  fail "c created again on 2: $(cat "$tmp/out")"
first "$u2/v1/sessions/nosuch"
[ "$(tail -1 "$tmp/out")" = 404 ] || fail "a session nobody created, from 2: $(cat "$tmp/out")"
echo "ok"
