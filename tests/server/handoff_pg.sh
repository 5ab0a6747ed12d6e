#!/usr/bin/env bash
# handoff_pg.sh AGENTC HTTPD URI CLUSTER_DIR PORT: a handoff on a PostgreSQL store with a stream
# of the session open on its worker. The stream's frames are made again from the journal for
# the new agent, read on the wake-up connection (never waited for on the loop): its ids are
# strictly increasing, it carries every event of the turn (the handoff's tool call and result,
# agent_changed, the new agent's answer), and the loop waited for no statement: the reopening
# under the new agent loads the session from its rows read ahead too.
set -uo pipefail
agentc=$1 httpd=$2 uri=$3 dir=$4 port=$5
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (handoff_pg.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 8 "$tmp/w.err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 300); do "$@" && return 0; sleep 0.05; done; return 1; }
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
sql() { PGOPTIONS='-c client_min_messages=warning' "$psql" -X -q -t -A -h "$dir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
sql "DROP SCHEMA IF EXISTS handoff CASCADE" || fail "psql"
"$httpd" --port-file "$tmp/model.port" --mode calc --log "$tmp/requests" 2>"$tmp/model.err" &
pids+=("$!")
wait_for test -s "$tmp/model.port" || fail "the model server did not start"
cat >"$tmp/ha.json" <<'JSON'
{"agents": [{"name": "b", "description": "Hands the conversation to b", "handoff": true,
             "system": "You are b.", "tools": ["hb.json"]}]}
JSON
cat >"$tmp/hb.json" <<'JSON'
{"agents": [{"name": "a", "description": "Hands the conversation to a", "handoff": true,
             "system": "You are a.", "tools": ["ha.json"]}]}
JSON
AGENTC_STORE_BLOCKING_LOG=1 AGENTC_TEST_KEY=sk-test "$agentc" serve --db "$uri?schema=handoff" \
  --listen 127.0.0.1:0 --port-file "$tmp/port" --base-url "http://127.0.0.1:$(cat "$tmp/model.port")/v1" \
  --model m --api-key-env AGENTC_TEST_KEY --system "You are a." --tools "$tmp/ha.json" 2>"$tmp/w.err" &
wpid=$!
pids+=("$wpid")
wait_for test -s "$tmp/port" || fail "the worker did not start"
u=http://127.0.0.1:$(cat "$tmp/port")
j() { curl -s --max-time 30 -H 'Content-Type: application/json' "$@"; }
j -X POST -d '{"id": "h"}' "$u/v1/sessions" | jq -e '.id == "h"' >/dev/null || fail "create"
curl -s -N --max-time 30 "$u/v1/sessions/h/events" >"$tmp/ev" &
pids+=("$!")
sleep 0.3
[ "$(j -X POST -d '{"content": "TRANSFER[b] one"}' "$u/v1/sessions/h/messages" -o /dev/null -w '%{http_code}')" = 202 ] || fail "message"
. "$(dirname "$0")/frames_lib.sh"
frames() { events "$tmp/ev"; }
done1() { frames | jq -s -e 'any(.[]; .event == "turn_done")' >/dev/null 2>&1; }
wait_for done1 || fail "no turn_done: $(cat "$tmp/ev")"
j "$u/v1/sessions/h" | jq -e '.agent == "b" and .status == "idle"' >/dev/null || fail "after the handoff: $(j "$u/v1/sessions/h")"
# strictly increasing ids (N or N.K): nothing sent twice
frames | jq -s -e '[.[].id | split(".") | map(tonumber) | .[0] * 1000 + (.[1] // 0)] | . == (sort | unique)' >/dev/null \
  || fail "frames sent again or out of order: $(grep '^id:' "$tmp/ev" | tr '\n' ' ')"
for ev in tool_call tool_result agent_changed turn_done; do
  frames | jq -s -e --arg e "$ev" 'any(.[]; .event == $e)' >/dev/null || fail "no $ev frame: $(grep '^id:' "$tmp/ev" | tr '\n' ' ')"
done
frames | jq -s -e 'any(.[]; .event == "turn_done" and .data.answer == "b answers: TRANSFER[b] one")' >/dev/null \
  || fail "b's answer: $(grep -A1 turn_done "$tmp/ev")"
waits=$(grep -c "the loop waited for the store" "$tmp/w.err")
[ "$waits" = 0 ] || fail "the loop waited for the store $waits times: $(grep 'loop waited' "$tmp/w.err")"
kill -TERM "$wpid"
wait "$wpid" || fail "the worker's exit status"
sql "DROP SCHEMA IF EXISTS handoff CASCADE"
echo "handoff_pg: ok"
