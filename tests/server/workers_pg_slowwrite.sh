#!/usr/bin/env bash
# workers_pg_slowwrite.sh AGENTC URI CLUSTER_DIR PORT: two `agentc serve` workers on one
# PostgreSQL store, the second one's database answering slowly (every packet held 250 ms each
# way by bench/loop_stall.mjs's proxy once both run). The writes the second one's requests make
# outside a session's commit (a session's row made by a create, removed by a delete) wait for
# the database suspended: a /healthz sent after each of them is answered before it (its loop
# runs meanwhile), and each is then answered as it would be at once. A delete forwarded to it
# is answered once its removal is done; a third worker's session unloaded when idle gives its
# lease up with the group commit, and its rows go when it is deleted unloaded.
set -uo pipefail
agentc=$1 uri=$2 dir=$3 port=$4
command -v curl >/dev/null && command -v jq >/dev/null && command -v node >/dev/null ||
  { echo "SKIP: curl, jq and node needed"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (workers_pg_slowwrite.sh:${BASH_LINENO[0]}): $*" >&2; for f in "$tmp"/*.err; do tail -n 5 "$f" >&2; done; exit 1; }
wait_for() { for _ in $(seq 1 300); do "$@" && return 0; sleep 0.05; done; return 1; }
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
sql() { PGOPTIONS='-c client_min_messages=warning' "$psql" -X -q -t -A -h "$dir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
sql "DROP SCHEMA IF EXISTS slowwrite CASCADE" || fail "psql"
. "$here/../support/pg_proxy.sh"
start_proxy "$port" "$tmp/delay"; pids+=("$proxy")
kill -0 "$proxy" 2>/dev/null || fail "no port for the proxy"
echo '{"content": "hi"}' >"$tmp/script"
start() { # start N DB_PORT [OPTION...]: worker N, its URL in u$N
  rm -f "$tmp/port$1"
  "$agentc" serve --db "${uri/:$port\//:$2/}?schema=slowwrite" --provider script --script "$tmp/script" \
    --listen 127.0.0.1:0 --port-file "$tmp/port$1" --forward-timeout-ms 20000 "${@:3}" 2>"$tmp/w$1.err" &
  pids+=($!)
  wait_for test -s "$tmp/port$1" || fail "worker $1 did not start"
  eval "u$1=http://127.0.0.1:$(cat "$tmp/port$1")"
}
start 1 "$port"
start 2 "$pport"
j() { curl -s --max-time 30 -H 'Content-Type: application/json' "$@"; }
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
# a session created on 2 (its row made), then deleted there (its row removed)
first -X POST -d '{}' "$u2/v1/sessions"
[ "$(tail -1 "$tmp/out")" = 201 ] || fail "a create on 2: $(cat "$tmp/out")"
d=$(head -1 "$tmp/out" | jq -r .id)
[ "$(sql "SELECT holder <> '' FROM slowwrite.sessions WHERE id = 'local/$d'")" = t ] ||
  fail "the row of $d is not there, leased"
j "$u1/v1/sessions/$d" | jq -e --arg d "$d" '.id == $d' >/dev/null || fail "$d not seen from 1"
first -X DELETE "$u2/v1/sessions/$d"
[ "$(tail -1 "$tmp/out")" = 200 ] && head -1 "$tmp/out" | jq -e '.deleted == true' >/dev/null ||
  fail "a delete on 2: $(cat "$tmp/out")"
[ "$(sql "SELECT count(*) FROM slowwrite.sessions WHERE id = 'local/$d'")" = 0 ] ||
  fail "the row of $d is still there"
j "$u2/v1/sessions/$d" | jq -e '.error.code == "not_found"' >/dev/null || fail "$d still seen on 2"
# a delete sent to 1 of a session 2 runs: forwarded, removed by 2, answered once it is
j -X POST -d '{"id": "e"}' "$u2/v1/sessions" | jq -e '.id == "e"' >/dev/null || fail "create e on 2"
j -X DELETE "$u1/v1/sessions/e" | jq -e '.deleted == true' >/dev/null || fail "delete e through 1"
[ "$(sql "SELECT count(*) FROM slowwrite.sessions WHERE id = 'local/e'")" = 0 ] ||
  fail "the row of e is still there once its delete was answered"
# a session unloaded when idle gives its lease up with the loop's group commit; deleted while
# unloaded, its rows go all the same
start 3 "$port" --unload-after-ms 300
j -X POST -d '{"id": "u"}' "$u3/v1/sessions" | jq -e '.id == "u"' >/dev/null || fail "create u on 3"
j -X POST -d '{"content": "hi"}' "$u3/v1/sessions/u/messages" >/dev/null
released() { [ "$(sql "SELECT holder = '' AND events >= 3 FROM slowwrite.sessions WHERE id = 'local/u'")" = t ]; }
wait_for released || fail "u's lease was not given up when it was unloaded: $(sql "SELECT holder, events FROM slowwrite.sessions WHERE id = 'local/u'")"
j "$u3/v1/sessions" | jq -e '[.data[] | select(.id == "u" and .loaded == false)] | length == 1' >/dev/null ||
  fail "u is still loaded on 3: $(j "$u3/v1/sessions")"
j -X DELETE "$u3/v1/sessions/u" | jq -e '.deleted == true' >/dev/null || fail "delete u on 3"
[ "$(sql "SELECT count(*) FROM slowwrite.events WHERE session = 'local/u'")" = 0 ] || fail "u's events are still there"
echo "ok"
