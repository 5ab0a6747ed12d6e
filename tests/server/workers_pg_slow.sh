#!/usr/bin/env bash
# workers_pg_slow.sh AGENTC URI CLUSTER_DIR PORT [reads|loads|forks]: two `agentc serve` workers on one PostgreSQL
# store, the second one's database answering slowly (every packet held 250 ms each way by
# bench/loop_stall.mjs's proxy once both run). The second one's requests that read the store
# for what the first one did (the view of a session the first created, the list, a create of an
# id the first has) wait for it suspended: a /healthz sent after each of them is answered before
# it (its loop runs meanwhile), and each is then answered as it would be at once (the list's
# views, of the rows it read, name the worker running each session). A new stream on the second
# one (its catch-up read from the store) opens while its loop answers /healthz at once, and, the
# first one appending turns meanwhile, its frames equal a fresh replay's (none missed or repeated:
# the catch-up attached at the event it read to, behind or ahead of the live frames). A session
# left mid-turn by a third worker killed is claimed by the second and loaded from its rows read
# ahead (without waiting), its loop answering /healthz at once meanwhile, and its turn finished;
# a session nobody runs is loaded on the second for a request, its lease taken and its rows read
# ahead without waiting, its loop answering /healthz at once meanwhile (its first commit the
# group's, its view made from memory); a
# request for a session 2's claim is loading takes no lease of its own and waits for that load
# (no commit of it refused), at most --forward-timeout-ms (then 503 store_error, the claim's
# load going on). A fork on the second reads the original's rows, and writes the fork's,
# without waiting: its loop answers /healthz at once meanwhile, and the fork's row, journal,
# snapshot and note are the original's up to the turn asked for; a fork of it POSTed on the first
# (forwarded to the second, which runs it) made there the same way, its answer put off until it
# is made, the fork then read from either worker; a turn calling a sub-agent there
# makes the child's row with its first commit, the child stored as it ran, seen from the first
# worker, the child's first view while it runs made without a read of its journal, a later fork's
# calls kept from its rows, and under a parent loaded there from the store (its calls read with
# its rows) the same; DELETEs through the first of sessions the second runs mid-turn do not wait there;
# a handoff there reopens its session on the new agent's engine without waiting (requests for it
# meanwhile wait for that load, each answered); a parent left mid-call by a killed worker, claimed
# there, or loaded for a request on a fourth worker, goes on with its child (the children of its
# unfinished calls read ahead with it and loaded first), without waiting; the second stopped
# (SIGTERM) mid forwarded fork exits 0, leaking nothing; a session left mid-turn, claimed by a
# fifth worker as it starts, has its calls read then (its first view reads nothing on the loop).
# Each part ends with the second one's agentc_store_blocking_statements_total at 0. "reads"
# (the default) runs the reads and the streams, "loads" the claim and the load, "forks" the fork.
set -uo pipefail
agentc=$1 uri=$2 dir=$3 port=$4 part=${5:-reads}
command -v curl >/dev/null && command -v jq >/dev/null && command -v node >/dev/null ||
  { echo "SKIP: curl, jq and node needed"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (workers_pg_slow.sh:${BASH_LINENO[0]}): $*" >&2; for f in "$tmp"/*.err; do tail -n 5 "$f" >&2; done; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
sql() { PGOPTIONS='-c client_min_messages=warning' "$psql" -X -q -t -A -h "$dir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
sql "DROP SCHEMA IF EXISTS slowdb CASCADE" || fail "psql"
. "$here/../support/pg_proxy.sh"
start_proxy "$port" "$tmp/delay"; pids+=("$proxy")
kill -0 "$proxy" 2>/dev/null || fail "no port for the proxy"
for _ in $(seq 1 120); do echo '{"content": "hi"}'; done >"$tmp/script"
lease=()
[ "$part" = loads ] && lease=(--lease-ms 3000) # a heartbeat (and a claim) every second
if [ "$part" = forks ]; then # f's two turns, then a turn calling the sub-agent math (it says hi)
  echo '{"agents": [{"name": "math", "description": "Does arithmetic"}]}' >"$tmp/tools.json"
  # the agent desk hands its sessions to helper (transfer_to_helper, its first model call)
  echo '{"agents": [{"name": "helper", "description": "Takes the conversation over", "handoff": true, "script": "helper.jsonl"}]}' >"$tmp/desk_tools.json"
  echo '{"tool_calls": [{"id": "t1", "name": "transfer_to_helper", "arguments": "{}"}]}' >"$tmp/desk.jsonl"
  printf '%s\n' '{"content": "helped"}' '{"content": "helped"}' >"$tmp/helper.jsonl"
  echo '{"agents": [{"name": "desk", "provider": "script", "script": "desk.jsonl", "tools": ["desk_tools.json"]}]}' >"$tmp/agents.json"
  lease=(--tools "$tmp/tools.json" --agents "$tmp/agents.json" --script-delay-ms 1500) # its model calls after the 202
  { echo '{"content": "hi"}'; echo '{"content": "hi"}'
    echo '{"tool_calls": [{"id": "k1", "name": "agent::math", "arguments": "{\"task\": \"add\"}"}]}'
    echo '{"content": "joined"}'; } >"$tmp/script" # each session's model calls from the first line
fi
start() { # start N DB_PORT [OPTION...]: worker N, its URL in u$N
  rm -f "$tmp/port$1"
  "$agentc" serve --db "${uri/:$port\//:$2/}?schema=slowdb" --provider script --script "$tmp/script" \
    --listen 127.0.0.1:0 --port-file "$tmp/port$1" --forward-timeout-ms 20000 "${lease[@]}" "${@:3}" 2>"$tmp/w$1.err" &
  pids+=($!)
  eval "pid$1=$!"
  wait_for test -s "$tmp/port$1" || fail "worker $1 did not start"
  eval "u$1=http://127.0.0.1:$(cat "$tmp/port$1")"
}
start 1 "$port"
start 2 "$pport"
j() { curl -s --max-time 30 -H 'Content-Type: application/json' "$@"; }
# 2's loop never waited for the database: no statement, commit or connection made synchronously
unblocked() { # [URL]: that worker's (default 2's)
  local k v u=${1:-$u2}
  for k in statement commit connect; do
    v=$(curl -s --max-time 10 "$u/metrics" | awk -v k="agentc_store_blocking_statements_total{kind=\"$k\"}" '$1 == k {print $2}')
    [ "$v" = 0 ] || fail "the loop of $u waited for the database (${k}s: ${v:-none})"
  done
}
j -X POST -d '{"id": "a"}' "$u1/v1/sessions" | jq -e '.id == "a"' >/dev/null || fail "create on 1"
echo 250 >"$tmp/delay" # from now on each of 2's reads takes 500 ms more
sleep 1                # what was under way has passed
if [ "$part" = reads ]; then
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

# ---- a new stream's catch-up on 2, while 1 appends ------------------------------------------
events() {
  awk 'BEGIN{id="";ev=""} /^id: /{id=substr($0,5)} /^event: /{ev=substr($0,8)}
       /^data: /{d=substr($0,7); printf "{\"id\":\"%s\",\"event\":\"%s\",\"data\":%s}\n", id, ev, d; id=""}' "$1"
}
norm() { # the frames, each run of text deltas joined into one (as a slow reader's are)
  events "$1" | jq -s -c 'reduce .[] as $e ([]; if length > 0 and .[-1].event == $e.event and ($e.event == "text" or $e.event == "reasoning")
    then .[-1] |= ($e + {data: ($e.data + {delta: (.data.delta + $e.data.delta)})}) else . + [$e] end) | .[]'
}
key='(split(".") | map(tonumber) | if length == 1 then . + [0] else . end)'
increasing() { events "$1" | jq -s -e "[.[] | select(.id != \"\") | .id | $key] | . as \$k | all(range(1; length); \$k[.] > \$k[. - 1])" >/dev/null; }
turns_done() { [ "$(grep -c '^event: turn_done' "$1")" -ge "$2" ]; }
idle() { j "$u1/v1/sessions/a?messages=0" | jq -e '.status == "idle"' >/dev/null; }
append() { # turns on 1, one after another, until the streams are open (at most 100)
  for _ in $(seq 1 100); do
    [ -e "$tmp/opened" ] && return 0
    j -X POST -d '{"content": "more"}' "$u1/v1/sessions/a/messages" >/dev/null
    wait_for idle || return 1
    sleep 0.05
  done
}
append &
ap=$!
# probe: /healthz on 2 answered at once (< 0.4 s) each time until stream $1 has its headers
probe() {
  local n=0 t
  for _ in $(seq 1 100); do
    [ -s "$tmp/$1.h" ] && break
    t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 10 "$u2/healthz")
    awk -v t="$t" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $t s while stream $1 opened"
    n=$((n + 1))
    sleep 0.05
  done
  [ "$n" -ge 2 ] && [ -s "$tmp/$1.h" ] || fail "stream $1 on 2 did not open after a /healthz ($n probes)"
}
curl -s -N --max-time 40 -D "$tmp/sa.h" "$u2/v1/sessions/a/events" >"$tmp/sa" &
probe sa
curl -s -N --max-time 40 -D "$tmp/sb.h" "$u2/v1/sessions/a/events" >"$tmp/sb" & # live frames exist now
probe sb
sleep 0.3
touch "$tmp/opened"
wait "$ap" || fail "the turns on 1 did not end"
curl -s -N --max-time 1 "$u1/v1/sessions/a/events" >"$tmp/r1" # a fresh replay on 1
done_turns=$(grep -c '^event: turn_done' "$tmp/r1")
[ "$done_turns" -ge 5 ] || fail "only $done_turns turns on 1"
for s in sa sb; do
  wait_for turns_done "$tmp/$s" "$done_turns" || fail "stream $s on 2 has $(grep -c '^event: turn_done' "$tmp/$s") of $done_turns turns"
  increasing "$tmp/$s" || fail "stream $s's ids do not strictly increase"
done
for s in sa sb; do
  [ "$(norm "$tmp/$s")" = "$(norm "$tmp/r1")" ] ||
    fail "stream $s on 2 differs from a fresh replay: $(diff <(norm "$tmp/$s") <(norm "$tmp/r1") | head -5)"
done
unblocked
echo "ok"
exit 0
fi
if [ "$part" = forks ]; then
# ---- a fork on 2 (its reads, its rebuild's rows and its rows written without waiting) --------
# longest REQUEST...: curl arguments run on 2, /healthz on 2 probed until it is answered; the
# longest in $longest, its answer in $tmp/out
longest_during() {
  { out=$(j -w '\n%{http_code}' "$@"); echo "$out" >"$tmp/out"; } &
  local bp=$! t
  longest=0
  while kill -0 "$bp" 2>/dev/null; do
    t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 20 "$u2/healthz")
    longest=$(awk -v a="$longest" -v b="$t" 'BEGIN{print (b > a ? b : a)}')
    sleep 0.05
  done
  wait "$bp"
}
sql "SELECT 1 FROM slowdb.sessions WHERE id = 'local/a'" | grep -q 1 || fail "a is not stored"
j -X POST -d '{"id": "f"}' "$u2/v1/sessions" | jq -e '.id == "f"' >/dev/null || fail "create f on 2"
fidle() { j "$u2/v1/sessions/f" | jq -e --argjson k "$1" '.status == "idle" and ([.messages[] | select(.role == "user")] | length) == $k' >/dev/null; }
k=0
for m in one two; do
  k=$((k + 1))
  j -X POST -d "{\"content\": \"$m\"}" "$u2/v1/sessions/f/messages" >/dev/null || fail "say $m to f"
  wait_for fidle "$k" || fail "f's turn $k: $(j "$u2/v1/sessions/f" | jq -c '{status, messages}')"
done
longest_during -X POST -d '{"at_turn": 1, "id": "g"}' "$u2/v1/sessions/f/fork"
[ "$(tail -1 "$tmp/out")" = 201 ] && head -1 "$tmp/out" |
  jq -e '.id == "g" and .forked_from.id == "f" and .forked_from.at_turn == 1 and .forked_from.at_event > 1' >/dev/null ||
  fail "the fork of f on 2: $(cat "$tmp/out")"
at=$(head -1 "$tmp/out" | jq .forked_from.at_event)
awk -v t="$longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $longest s while it forked f"
fork_longest=$longest
[ "$(sql "SELECT events, snapshot_seq, holder, at_rest FROM slowdb.sessions WHERE id = 'local/g'")" = "$at|$at||1" ] ||
  fail "g's row: $(sql "SELECT events, snapshot_seq, holder, at_rest FROM slowdb.sessions WHERE id = 'local/g'")"
[ "$(sql "SELECT count(*), max(n) FROM slowdb.events WHERE session = 'local/g'")" = "$at|$at" ] ||
  fail "g's journal: $(sql "SELECT count(*), max(n) FROM slowdb.events WHERE session = 'local/g'")"
[ "$(sql "SELECT string_agg(ev || data, ',' ORDER BY n) FROM slowdb.events WHERE session = 'local/g'")" = \
  "$(sql "SELECT string_agg(ev || data, ',' ORDER BY n) FROM slowdb.events WHERE session = 'local/f' AND n <= $at")" ] ||
  fail "g's journal is not f's up to event $at"
sql "SELECT body FROM slowdb.notes WHERE session = 'local/g' AND kind = 'forked_from' AND after = $at" |
  jq -e --argjson at "$at" '.id == "local/f" and .at_event == $at and .at_turn == 1' >/dev/null ||
  fail "g's note: $(sql "SELECT after, kind, body FROM slowdb.notes WHERE session = 'local/g'")"
[ "$(sql "SELECT n FROM slowdb.snapshots WHERE session = 'local/g' AND kept = 1 ORDER BY n DESC LIMIT 1")" = "$at" ] ||
  fail "g's snapshot at $at"
j "$u1/v1/sessions/g" | jq -e '[.messages[] | select(.role == "user") | .content] == ["one"]' >/dev/null ||
  fail "g from 1: $(j "$u1/v1/sessions/g" | jq -c .messages)"
longest_during -X POST -d '{"at_turn": 1, "id": "g"}' "$u2/v1/sessions/f/fork"
[ "$(tail -1 "$tmp/out")" = 409 ] || fail "g forked again: $(cat "$tmp/out")"
longest_during -X POST -d '{"at_turn": 7}' "$u2/v1/sessions/f/fork"
[ "$(tail -1 "$tmp/out")" = 409 ] && head -1 "$tmp/out" | jq -e '.error.message | test("no turn 7")' >/dev/null ||
  fail "turn 7 of f: $(cat "$tmp/out")"
# ---- a fork of f POSTed on 1, forwarded to 2 (which runs f): made there by the same steps, its
# inbox answer put off until its rows are written; 2's loop answers /healthz meanwhile
longest_during -X POST -d '{"at_turn": 2, "id": "g2"}' "$u1/v1/sessions/f/fork"
[ "$(tail -1 "$tmp/out")" = 201 ] && head -1 "$tmp/out" |
  jq -e --argjson at "$at" '.id == "g2" and .forked_from.id == "f" and .forked_from.at_turn == 2 and .forked_from.at_event > $at and (keys == ["forked_from", "id"])' >/dev/null ||
  fail "the fork of f through 1: $(cat "$tmp/out")"
at2=$(head -1 "$tmp/out" | jq .forked_from.at_event)
awk -v t="$longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $longest s while it forked f for 1"
fwd_longest=$longest
[ "$(sql "SELECT events, snapshot_seq, holder, at_rest FROM slowdb.sessions WHERE id = 'local/g2'")" = "$at2|$at2||1" ] ||
  fail "g2's row: $(sql "SELECT events, snapshot_seq, holder, at_rest FROM slowdb.sessions WHERE id = 'local/g2'")"
[ "$(sql "SELECT string_agg(ev || data, ',' ORDER BY n) FROM slowdb.events WHERE session = 'local/g2'")" = \
  "$(sql "SELECT string_agg(ev || data, ',' ORDER BY n) FROM slowdb.events WHERE session = 'local/f' AND n <= $at2")" ] ||
  fail "g2's journal is not f's up to event $at2"
turns_in() { [ "$(grep -c '^event: turn_done' "$1")" -ge "$2" ]; }
for v in "$u1" "$u2"; do # read from either worker: its view and its events
  j "$v/v1/sessions/g2" | jq -e '.id == "g2" and [.messages[] | select(.role == "user") | .content] == ["one", "two"]' >/dev/null ||
    fail "g2 from $v: $(j "$v/v1/sessions/g2" | jq -c .messages)"
  curl -s -N --max-time 15 "$v/v1/sessions/g2/events" >"$tmp/g2ev" &
  cp=$!
  wait_for turns_in "$tmp/g2ev" 2
  sleep 0.3 # anything after its last turn's end
  kill "$cp" 2>/dev/null; wait "$cp"
  last=$(grep '^id: ' "$tmp/g2ev" | tail -1 | cut -c5- | cut -d. -f1) # its frames' ids: N or N.K
  [ "$last" = "$at2" ] && [ "$(grep -c '^event: turn_done' "$tmp/g2ev")" = 2 ] ||
    fail "g2's events from $v: $(grep -c '^id: ' "$tmp/g2ev") ids, the last $(grep '^id: ' "$tmp/g2ev" | tail -1)"
done
longest_during -X POST -d '{"at_turn": 2, "id": "g2"}' "$u1/v1/sessions/f/fork"
[ "$(tail -1 "$tmp/out")" = 409 ] || fail "g2 forked again through 1: $(cat "$tmp/out")"
longest_during -X POST -d '{"at_turn": 7}' "$u1/v1/sessions/f/fork"
[ "$(tail -1 "$tmp/out")" = 409 ] && head -1 "$tmp/out" | jq -e '.error.code == "fork_failed" and (.error.message | test("no turn 7"))' >/dev/null ||
  fail "turn 7 of f through 1: $(cat "$tmp/out")"
# ---- a forwarded fork that outlasts its sender: worker 3 (--forward-timeout-ms 5000: time for 2
# to take it, on a loaded machine too) gives up (504) while 2, which took it, is cut from its
# database (the proxy stopped); 2 then makes it, whole, answers no one and leaks nothing
start 3 "$port" --forward-timeout-ms 5000
{ j -w '\n%{http_code}' -X POST -d '{"at_turn": 2, "id": "g3"}' "$u3/v1/sessions/f/fork" >"$tmp/g3out"; } &
g3p=$!
inbox() { sql "SELECT state FROM slowdb.inbox WHERE session = 'local/f' AND route = '/fork' ORDER BY id DESC LIMIT 1"; }
taken() { [ "$(inbox)" = taken ]; }
wait_for taken || fail "2 did not take the fork through 3: $(inbox)"
kill -STOP "$proxy"
wait "$g3p"
kill -CONT "$proxy"
[ "$(tail -1 "$tmp/g3out")" = 504 ] && head -1 "$tmp/g3out" | jq -e '.error.code == "worker_timeout"' >/dev/null ||
  fail "the fork g3 through 3: $(cat "$tmp/g3out")"
answered() { [ "$(inbox)" = done ]; }
wait_for answered || fail "2 did not answer the fork through 3: $(inbox)"
g3() { sql "SELECT (SELECT count(*) FROM slowdb.sessions WHERE id = 'local/g3') || ' ' || (SELECT count(*) FROM slowdb.events WHERE session = 'local/g3') || ' ' || (SELECT count(*) FROM slowdb.notes WHERE session = 'local/g3' AND kind = 'forked_from')"; }
[ "$(g3)" = "1 $at2 1" ] || fail "g3 made after its sender gave up: $(g3) rows/events/notes"
j "$u3/v1/sessions/g3" | jq -e '[.messages[] | select(.role == "user") | .content] == ["one", "two"]' >/dev/null ||
  fail "g3 from 3: $(j "$u3/v1/sessions/g3")"
kill -9 "$pid3"
# ---- a sub-agent's session made on 2: its row with its first commit, its last given to the group
# (measured from the 202, whose view still reads the row, to the turn's end, read from the store)
j -w '\n%{http_code}' -X POST -d '{"content": "delegate"}' "$u2/v1/sessions/f/messages" >"$tmp/out"
[ "$(tail -1 "$tmp/out")" = 202 ] || fail "the delegating turn of f: $(cat "$tmp/out")"
# the sub-agent's session's first view while it runs on 2: its calls known from memory (its
# journal was empty), no read of its journal
running_child() { child=$(j "$u2/v1/sessions/f" | jq -r '.children[0].session // empty'); [ -n "$child" ]; }
wait_for running_child || fail "f's child did not start"
longest_during "$u2/v1/sessions/$child"
[ "$(tail -1 "$tmp/out")" = 200 ] && head -1 "$tmp/out" | jq -e '.children == null and .parent.session == "f"' >/dev/null ||
  fail "the child's view on 2: $(cat "$tmp/out")"
awk -v t="$longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $longest s while it gave the child's first view"
child_longest=$longest
turn_over() {
  [ "$(sql "SELECT at_rest FROM slowdb.sessions WHERE id = 'local/f' AND EXISTS(SELECT 1 FROM slowdb.events WHERE session = 'local/f' AND ev = 'agent.done')")" = 1 ]
}
longest=0 probes=0
for _ in $(seq 1 400); do
  turn_over && break
  t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 20 "$u2/healthz")
  longest=$(awk -v a="$longest" -v b="$t" 'BEGIN{print (b > a ? b : a)}')
  probes=$((probes + 1))
  sleep 0.05
done
turn_over || fail "f's delegating turn did not end: $(j "$u2/v1/sessions/f" | jq -c '{status, answer}')"
[ "$probes" -ge 5 ] || fail "the delegating turn ended after $probes probes"
sub_longest=$longest
awk -v t="$sub_longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $sub_longest s while f ran its sub-agent"
j "$u2/v1/sessions/f" | jq -e '.status == "idle" and .answer == "joined" and (.children | length) == 1' >/dev/null ||
  fail "f after its delegating turn: $(j "$u2/v1/sessions/f" | jq -c '{status, answer, children}')"
child=$(j "$u2/v1/sessions/f" | jq -r '.children[0].session')
[ "$(sql "SELECT at_rest, events > 0, holder = '' OR holder LIKE 'agentc %' FROM slowdb.sessions WHERE id = 'local/$child'")" = "1|t|t" ] ||
  fail "the child's row: $(sql "SELECT * FROM slowdb.sessions WHERE id = 'local/$child'")"
[ "$(sql "SELECT count(*) FROM slowdb.events WHERE session = 'local/$child' AND ev = 'spawn'")" = 1 ] ||
  fail "the child's journal: $(sql "SELECT n, ev FROM slowdb.events WHERE session = 'local/$child'")"
j "$u1/v1/sessions/$child" | jq -e '.answer == "hi" and .parent.session == "f"' >/dev/null ||
  fail "the child from 1: $(j "$u1/v1/sessions/$child" | jq -c '{answer, parent}')"
# ---- a fork of f made after its delegating turn: its view's calls (children) kept on 2 from
# the rows it was made from
longest_during -X POST -d '{"at_turn": 3, "id": "h"}' "$u2/v1/sessions/f/fork"
[ "$(tail -1 "$tmp/out")" = 201 ] || fail "the fork h of f on 2: $(cat "$tmp/out")"
longest_during "$u2/v1/sessions/h"
[ "$(tail -1 "$tmp/out")" = 200 ] &&
  head -1 "$tmp/out" | jq -e --arg c "$child" '(.children | length) == 1 and .children[0].session == $c and .children[0].ok == true' >/dev/null ||
  fail "h's view on 2: $(cat "$tmp/out")"
awk -v t="$longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $longest s while it gave h's view"
h_longest=$longest
# ---- DELETEs sent to 1 of sessions 2 runs mid-turn (their commits in flight on 2's slow link) --
for d in d1 d2 d3 d4; do
  j -X POST -d "{\"id\": \"$d\"}" "$u2/v1/sessions" | jq -e ".id == \"$d\"" >/dev/null || fail "create $d on 2"
done
posts=()
for d in d1 d2 d3 d4; do
  j -X POST -d '{"content": "go"}' "$u2/v1/sessions/$d/messages" >/dev/null &
  posts+=($!)
done
wait "${posts[@]}"
: >"$tmp/deleted"
sleep 1.2 # their model calls answer (1.5 s): their answers' commits under way from now on
for d in d1 d2 d3 d4; do
  j -w ' %{http_code}\n' -X DELETE "$u1/v1/sessions/$d" >>"$tmp/deleted" &
  sleep 0.15
done

longest=0
for _ in $(seq 1 400); do
  [ "$(wc -l <"$tmp/deleted")" -ge 4 ] && break
  t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 20 "$u2/healthz")
  longest=$(awk -v a="$longest" -v b="$t" 'BEGIN{print (b > a ? b : a)}')
  sleep 0.05
done
[ "$(grep -c '"deleted":true} 200$' "$tmp/deleted")" = 4 ] || fail "the DELETEs through 1: $(cat "$tmp/deleted")"
[ "$(sql "SELECT count(*) FROM slowdb.sessions WHERE id LIKE 'local/d_'") $(sql "SELECT count(*) FROM slowdb.events WHERE session LIKE 'local/d_'")" = "0 0" ] ||
  fail "rows of deleted sessions: $(sql "SELECT id, events FROM slowdb.sessions WHERE id LIKE 'local/d_'")"
del_longest=$longest
awk -v t="$del_longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $del_longest s while it removed sessions mid-turn"
# ---- a handoff on 2: its session opened again on helper's engine once its last commit is
# written, its lease taken and its rows read ahead without waiting; requests for it meanwhile
# wait for that load (each answered 200, none failing for want of the session)
j -X POST -d '{"id": "ho", "agent": "desk"}' "$u2/v1/sessions" | jq -e '.id == "ho" and .agent == "desk"' >/dev/null ||
  fail "create ho on 2"
j -w '\n%{http_code}' -X POST -d '{"content": "help me"}' "$u2/v1/sessions/ho/messages" >"$tmp/out"
[ "$(tail -1 "$tmp/out")" = 202 ] || fail "the message to ho: $(cat "$tmp/out")"
handed() {
  [ "$(sql "SELECT at_rest FROM slowdb.sessions WHERE id = 'local/ho' AND (SELECT count(*) FROM slowdb.events WHERE session = 'local/ho' AND ev = 'llm.completed') >= 2")" = 1 ]
}
: >"$tmp/ho_views"
ho_views() { # ho's view on 2 asked for every 0.2 s until the handoff's turn is stored
  while ! handed; do
    j -o /dev/null -w '%{http_code}\n' --max-time 30 "$u2/v1/sessions/ho" >>"$tmp/ho_views"
    sleep 0.2
  done
}
ho_views &
vp=$!
longest=0 probes=0
for _ in $(seq 1 400); do
  handed && break
  t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 20 "$u2/healthz")
  longest=$(awk -v a="$longest" -v b="$t" 'BEGIN{print (b > a ? b : a)}')
  probes=$((probes + 1))
  sleep 0.05
done
wait "$vp"
handed || fail "ho's handoff turn did not end: $(j "$u2/v1/sessions/ho" | jq -c '{status, agent, answer}')"
[ "$probes" -ge 5 ] || fail "ho's handoff ended after $probes probes"
hand_longest=$longest
j "$u2/v1/sessions/ho" | jq -e '.status == "idle" and .agent == "helper" and .answer == "helped"' >/dev/null ||
  fail "ho after its handoff: $(j "$u2/v1/sessions/ho" | jq -c '{status, agent, answer}')"
[ "$(sort -u "$tmp/ho_views" | tr '\n' ' ')" = "200 " ] || fail "ho's views while it was handed on: $(sort | uniq -c <"$tmp/ho_views")"
! grep -q "handoff failed" "$tmp/w2.err" || fail "the handoff on 2 failed: $(grep 'handoff failed' "$tmp/w2.err")"
[ "$(sql "SELECT count(*) FROM slowdb.events WHERE session = 'local/ho' AND ev = 'agent.changed' AND data LIKE '%handoff%'")" = 1 ] ||
  fail "ho's journal: $(sql "SELECT n, ev FROM slowdb.events WHERE session = 'local/ho'")"
awk -v t="$hand_longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $hand_longest s while ho was handed on"
# ---- a sub-agent's session under a parent loaded on 2 from the store (its calls read with its
# rows: this child none of them), made without a read as under a parent made there
j -X POST -d '{"id": "q"}' "$u1/v1/sessions" | jq -e '.id == "q"' >/dev/null || fail "create q on 1"
qidle() { j "$u1/v1/sessions/q" | jq -e --argjson k "$1" '.status == "idle" and ([.messages[] | select(.role == "user")] | length) == $k' >/dev/null; }
k=0
for m in one two; do
  k=$((k + 1))
  j -X POST -d "{\"content\": \"$m\"}" "$u1/v1/sessions/q/messages" >/dev/null || fail "say $m to q"
  wait_for qidle "$k" || fail "q's turn $k on 1"
done
kill -TERM "$pid1" # drained: q's lease given up, nobody runs q
wait "$pid1" || fail "worker 1 did not stop cleanly: $?"
j -w '\n%{http_code}' -X POST -d '{"content": "delegate"}' "$u2/v1/sessions/q/messages" >"$tmp/out"
[ "$(tail -1 "$tmp/out")" = 202 ] || fail "the delegating turn of q on 2: $(cat "$tmp/out")"
q_over() {
  [ "$(sql "SELECT at_rest FROM slowdb.sessions WHERE id = 'local/q' AND EXISTS(SELECT 1 FROM slowdb.events WHERE session = 'local/q' AND ev = 'agent.done')")" = 1 ]
}
longest=0 probes=0
for _ in $(seq 1 400); do
  q_over && break
  t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 20 "$u2/healthz")
  longest=$(awk -v a="$longest" -v b="$t" 'BEGIN{print (b > a ? b : a)}')
  probes=$((probes + 1))
  sleep 0.05
done
q_over || fail "q's delegating turn did not end: $(j "$u2/v1/sessions/q" | jq -c '{status, answer}')"
[ "$probes" -ge 5 ] || fail "q's delegating turn ended after $probes probes"
loaded_longest=$longest
awk -v t="$loaded_longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $loaded_longest s while q, loaded there, ran its sub-agent"
j "$u2/v1/sessions/q" | jq -e '.status == "idle" and .answer == "joined" and (.children | length) == 1' >/dev/null ||
  fail "q after its delegating turn: $(j "$u2/v1/sessions/q" | jq -c '{status, answer, children}')"
child=$(j "$u2/v1/sessions/q" | jq -r '.children[0].session')
[ "$(sql "SELECT count(*) FROM slowdb.events WHERE session = 'local/$child' AND ev = 'spawn'")" = 1 ] ||
  fail "q's child's journal: $(sql "SELECT n, ev FROM slowdb.events WHERE session = 'local/$child'")"
j "$u2/v1/sessions/$child" | jq -e '.answer == "hi" and .parent.session == "q"' >/dev/null ||
  fail "q's child: $(j "$u2/v1/sessions/$child" | jq -c '{answer, parent}')"
# ---- a parent left mid-call by a killed worker, claimed by 2: the child of its unfinished call
# (claimed too) loaded first, from its rows read ahead, then the parent, whose call run again
# takes that child as it stands (no read of it on 2's loop); the child goes on, then the parent
echo '{"agents": [{"name": "calc", "description": "Adds", "script": "calc.jsonl"}]}' >"$tmp/w3tools.json"
echo '{"content": "sum"}' >"$tmp/calc.jsonl"
{ echo '{"tool_calls": [{"id": "c1", "name": "agent::calc", "arguments": "{\"task\": \"add\"}"}]}'
  echo '{"content": "joined"}'; } >"$tmp/p3.jsonl"
mid_call() { # mid_call ID: session ID made on a direct worker (its lease 1 s), killed mid-call
  rm -f "$tmp/port3"
  "$agentc" serve --db "$uri?schema=slowdb" --provider script --script "$tmp/p3.jsonl" --tools "$tmp/w3tools.json" \
    --script-delay-ms 2500 --lease-ms 1000 --listen 127.0.0.1:0 --port-file "$tmp/port3" 2>"$tmp/w3.err" &
  pids+=($!)
  p3=$!
  wait_for test -s "$tmp/port3" || fail "worker 3 did not start"
  u3=http://127.0.0.1:$(cat "$tmp/port3")
  j -X POST -d "{\"id\": \"$1\"}" "$u3/v1/sessions" | jq -e --arg id "$1" '.id == $id' >/dev/null || fail "create $1 on 3"
  j -X POST -d '{"content": "delegate"}' "$u3/v1/sessions/$1/messages" | jq -e '.status == "running"' >/dev/null ||
    fail "$1's turn on 3"
  pc_child=""
  child_mid() { # its child stored mid-turn, its model call under way
    pc_child=$(sql "SELECT id FROM slowdb.sessions WHERE id LIKE 'local/$1.calc.%' AND at_rest = 0")
    [ -n "$pc_child" ] && [ "$(sql "SELECT count(*) FROM slowdb.events WHERE session = '$pc_child' AND ev = 'llm.started'")" -ge 1 ]
  }
  wait_for child_mid "$1" || fail "$1's child did not start on 3"
  kill -9 "$p3"
}
call_over() { # call_over ID: its call answered, its turn ended
  [ "$(sql "SELECT at_rest FROM slowdb.sessions WHERE id = 'local/$1' AND EXISTS(SELECT 1 FROM slowdb.events WHERE session = 'local/$1' AND ev = 'agent.done')")" = 1 ]
}
pc_over() { call_over pc; }
mid_call pc
longest=0 probes=0
for _ in $(seq 1 600); do # 2's heartbeat (every 3.3 s) claims both once their leases ran out
  pc_over && break
  t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 20 "$u2/healthz")
  longest=$(awk -v a="$longest" -v b="$t" 'BEGIN{print (b > a ? b : a)}')
  probes=$((probes + 1))
  sleep 0.05
done
pc_over || fail "pc's call did not end on 2: $(tail -5 "$tmp/w2.err")"
claim_longest=$longest
grep -q "session 'local/pc': its worker .* is gone; resumed here" "$tmp/w2.err" || fail "2 did not resume pc: $(tail -3 "$tmp/w2.err")"
! grep -q "lost its lease" "$tmp/w2.err" || fail "a load on 2 was fenced out: $(grep 'lost its lease' "$tmp/w2.err")"
j "$u2/v1/sessions/pc" | jq -e '.status == "idle" and .answer == "joined" and (.children | length) == 1 and .children[0].ok == true' >/dev/null ||
  fail "pc on 2: $(j "$u2/v1/sessions/pc" | jq -c '{status, answer, children}')"
j "$u2/v1/sessions/${pc_child#local/}" | jq -e '.answer == "sum" and .parent.session == "pc"' >/dev/null ||
  fail "pc's child on 2: $(j "$u2/v1/sessions/${pc_child#local/}" | jq -c '{status, answer, parent}')"
[ "$(sql "SELECT count(*) FROM slowdb.events WHERE session = '$pc_child' AND ev = 'spawn'")" = 1 ] ||
  fail "pc's child's journal: $(sql "SELECT n, ev FROM slowdb.events WHERE session = '$pc_child'")"
awk -v t="$claim_longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $claim_longest s while it claimed pc and its child"
# ---- the same parent left mid-call loaded for a request on a worker whose claims are far apart
# (4: a heartbeat every 20 s): the child of its unfinished call (nobody runs it) has its lease
# taken and its rows read with the parent's, and is loaded first, without waiting
unblocked
# ---- a holder stopped (SIGTERM) mid forwarded fork: 2 takes a fork of f through 3 and stops
# before it is made; 2 exits 0, leaking nothing (under ASan or valgrind its exit and stderr say
# so); 3's sender is answered within its bound, the fork whole or absent
start 3 "$port" --forward-timeout-ms 5000
{ j -w '\n%{http_code}' -X POST -d '{"at_turn": 2, "id": "g4"}' "$u3/v1/sessions/f/fork" >"$tmp/g4out"; } &
g4p=$!
wait_for taken || fail "2 did not take the fork through 3: $(inbox)"
kill -TERM "$pid2"
wait "$pid2"
rc=$?
[ "$rc" = 0 ] || fail "worker 2, stopped mid forwarded fork, exited $rc"
grep -q "LeakSanitizer\|AddressSanitizer\|definitely lost: [1-9]" "$tmp/w2.err" &&
  fail "worker 2, stopped mid forwarded fork: $(grep -A5 "Sanitizer\|definitely lost" "$tmp/w2.err" | head -20)"
wait "$g4p"
g4() { sql "SELECT (SELECT count(*) FROM slowdb.sessions WHERE id = 'local/g4') || ' ' || (SELECT count(*) FROM slowdb.events WHERE session = 'local/g4') || ' ' || (SELECT count(*) FROM slowdb.notes WHERE session = 'local/g4' AND kind = 'forked_from')"; }
case "$(tail -1 "$tmp/g4out")" in
201) [ "$(g4)" = "1 $at2 1" ] || fail "g4 answered 201 but not whole: $(g4)" ;;
503 | 504) [ "$(g4)" = "1 $at2 1" ] || [ "$(g4)" = "0 0 0" ] || fail "g4 neither whole nor absent: $(g4)" ;;
*) fail "the fork g4 through 3, 2 stopping: $(cat "$tmp/g4out")" ;;
esac
kill -9 "$pid3"
lease=(--tools "$tmp/tools.json" --agents "$tmp/agents.json" --script-delay-ms 1500 --lease-ms 60000)
start 4 "$pport"
mid_call pr
sleep 1.5 # its lease and its child's run out
pr_loaded() { j "$u4/v1/sessions/pr" | jq -e '.id == "pr"' >/dev/null; }
longest=0 probes=0
pr_loaded || { sleep 1; pr_loaded; } || fail "pr from 4: $(j "$u4/v1/sessions/pr")"
for _ in $(seq 1 600); do
  call_over pr && break
  t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 20 "$u4/healthz")
  longest=$(awk -v a="$longest" -v b="$t" 'BEGIN{print (b > a ? b : a)}')
  probes=$((probes + 1))
  sleep 0.05
done
call_over pr || fail "pr's call did not end on 4: $(tail -5 "$tmp/w4.err")"
[ "$probes" -ge 5 ] || fail "pr's call ended after $probes probes"
req_longest=$longest
j "$u4/v1/sessions/pr" | jq -e '.status == "idle" and .answer == "joined" and (.children | length) == 1 and .children[0].ok == true' >/dev/null ||
  fail "pr on 4: $(j "$u4/v1/sessions/pr" | jq -c '{status, answer, children}')"
j "$u4/v1/sessions/${pc_child#local/}" | jq -e '.answer == "sum" and .parent.session == "pr"' >/dev/null ||
  fail "pr's child on 4: $(j "$u4/v1/sessions/${pc_child#local/}" | jq -c '{status, answer, parent}')"
! grep -q "lost its lease" "$tmp/w4.err" || fail "a load on 4 was fenced out: $(grep 'lost its lease' "$tmp/w4.err")"
awk -v t="$req_longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 4 took $req_longest s while pr, loaded there mid-call, ran its child again"
unblocked "$u4"
# ---- a session left mid-turn, claimed by a worker as it starts (before its loop serves): its
# calls read then too, so its first view reads nothing on the loop
kill -9 "$pid4" # its claims (every 20 s) would take st first
echo '{"content": "late"}' >"$tmp/st.jsonl"
rm -f "$tmp/port3"
"$agentc" serve --db "$uri?schema=slowdb" --provider script --script "$tmp/st.jsonl" --script-delay-ms 2500 \
  --lease-ms 1000 --listen 127.0.0.1:0 --port-file "$tmp/port3" 2>"$tmp/w3.err" &
pids+=($!)
p3=$!
wait_for test -s "$tmp/port3" || fail "worker 3 did not start"
u3=http://127.0.0.1:$(cat "$tmp/port3")
j -X POST -d '{"id": "st"}' "$u3/v1/sessions" | jq -e '.id == "st"' >/dev/null || fail "create st on 3"
j -X POST -d '{"content": "go"}' "$u3/v1/sessions/st/messages" | jq -e '.status == "running"' >/dev/null || fail "st's turn on 3"
st_mid() { [ "$(sql "SELECT count(*) FROM slowdb.events WHERE session = 'local/st' AND ev = 'llm.started'")" -ge 1 ]; }
wait_for st_mid || fail "st's turn on 3 was not stored"
kill -9 "$p3"
sleep 1.5 # its lease runs out
start 5 "$pport"
grep -q ", [1-9][0-9]* resumed" "$tmp/w5.err" || fail "5 resumed nothing as it started: $(head -3 "$tmp/w5.err")"
j "$u5/v1/sessions/st" | jq -e '.id == "st" and .loaded' >/dev/null || fail "st on 5: $(j "$u5/v1/sessions/st")"
st_idle() { j "$u5/v1/sessions/st" | jq -e '.status == "idle" and (.answer | length) > 0' >/dev/null; }
wait_for st_idle || fail "st's turn did not end on 5: $(j "$u5/v1/sessions/st" | jq -c '{status, answer}')"
unblocked "$u5"
echo "ok (longest /healthz on 2 while it forked f: $fork_longest s, for 1: $fwd_longest s; while f ran its sub-agent: $sub_longest s; the child's view: $child_longest s, h's: $h_longest s; while it removed sessions mid-turn: $del_longest s; while q, loaded, ran its sub-agent: $loaded_longest s; while ho was handed on: $hand_longest s; while it claimed pc mid-call: $claim_longest s; 4, while pr, loaded mid-call, went on: $req_longest s)"
exit 0
fi
for b in b p; do
  j -X POST -d "{\"id\": \"$b\"}" "$u1/v1/sessions" | jq -e ".id == \"$b\"" >/dev/null || fail "create $b on 1"
done

# ---- a claimed session loaded on 2 from its rows read ahead ---------------------------------
kill -9 "${pids[1]}" # worker 1: 2 alone claims what 3 leaves
jq -cn '{content: "one two three four five six seven eight nine ten"}' >"$tmp/script3"
rm -f "$tmp/port3"
"$agentc" serve --db "$uri?schema=slowdb" --provider script --script "$tmp/script3" --script-delay-ms 2000 \
  --lease-ms 1000 --listen 127.0.0.1:0 --port-file "$tmp/port3" 2>"$tmp/w3.err" &
pids+=($!)
p3=$!
wait_for test -s "$tmp/port3" || fail "worker 3 did not start"
u3=http://127.0.0.1:$(cat "$tmp/port3")
j -X POST -d '{"id": "m"}' "$u3/v1/sessions" | jq -e '.id == "m"' >/dev/null || fail "create m on 3"
j -X POST -d '{"content": "go"}' "$u3/v1/sessions/m/messages" | jq -e '.status == "running"' >/dev/null ||
  fail "m's turn on 3"
row() { sql "SELECT at_rest FROM slowdb.sessions WHERE id = 'local/m'"; }
mid_turn() { [ "$(row)" = 0 ]; }
wait_for mid_turn || fail "m's turn on 3 was not stored"
kill -9 "$p3" # mid-turn: its model call in flight
longest=0
for _ in $(seq 1 400); do # 2's heartbeat (every second) claims it, reads its rows, loads it
  [ "$(row)" = 1 ] && break
  t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 10 "$u2/healthz")
  longest=$(awk -v a="$longest" -v b="$t" 'BEGIN{print (b > a ? b : a)}')
  sleep 0.05
done
[ "$(row)" = 1 ] || fail "m was not finished on 2: $(row); $(tail -3 "$tmp/w2.err")"
grep -q "session 'local/m': its worker .* is gone; resumed here" "$tmp/w2.err" || fail "2 did not resume m: $(tail -3 "$tmp/w2.err")"
awk -v t="$longest" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $longest s while it claimed and loaded m"

# ---- sessions nobody runs loaded on 2 for a request, from their rows read ahead ---------------
# Its lease is taken on the wake-up connection too, before its rows and its journal's calls are
# read, so the loader sends nothing for it; its first commit goes to the group commit and the
# reply's view is made from memory: the loop never waits (with the lease, the commit and the
# view waiting, 15 round trips: 7.5 s; with only the lease off the loop, 3.5 s).
# loaded NAME CURL-ARGS...: the request sent to 2, /healthz on 2 probed meanwhile (answered
# first, each at once); its answer in $tmp/out, the longest /healthz in $longest2
loaded() {
  : >"$tmp/order"
  { out=$(j -w '\n%{http_code}' "${@:2}"); echo "request" >>"$tmp/order"; echo "$out" >"$tmp/out"; } &
  local bp=$! t
  sleep 0.2
  longest2=0
  while kill -0 "$bp" 2>/dev/null; do
    t=$(curl -s -o /dev/null -w '%{time_total}' --max-time 10 "$u2/healthz") && [ ! -s "$tmp/order" ] &&
      echo "healthz" >>"$tmp/order"
    longest2=$(awk -v a="$longest2" -v b="$t" 'BEGIN{print (b > a ? b : a)}')
    sleep 0.05
  done
  wait "$bp"
  [ "$(tr '\n' ' ' <"$tmp/order")" = "healthz request " ] || fail "answered in the order $(cat "$tmp/order") for $1"
  awk -v t="$longest2" 'BEGIN{exit !(t < 0.4)}' || fail "/healthz on 2 took $longest2 s while it loaded $1"
}
loaded b "$u2/v1/sessions/b"
[ "$(tail -1 "$tmp/out")" = 200 ] && head -1 "$tmp/out" | jq -e '.id == "b" and .loaded and .status == "idle"' >/dev/null ||
  fail "b loaded on 2: $(cat "$tmp/out")"
longest_b=$longest2
# the view made from memory says what the row says once the load's commit is in
brow() { sql "SELECT events || ' ' || holder FROM slowdb.sessions WHERE id = 'local/b'"; }
view=$(head -1 "$tmp/out" | jq -r '"\(.last_event_id) \(.worker)"')
same() { [ "$(brow)" = "$view" ]; }
wait_for same || fail "b's view on 2 says $view, its row $(brow)"
loaded p -X POST -d '{"content": "hello"}' "$u2/v1/sessions/p/messages"
[ "$(tail -1 "$tmp/out")" = 202 ] && head -1 "$tmp/out" | jq -e '.id == "p" and (.accepted | type == "string")' >/dev/null ||
  fail "a message to p loaded on 2: $(cat "$tmp/out")"
p_idle() { j "$u2/v1/sessions/p" | jq -e '.status == "idle" and .last_event_id > 0' >/dev/null; }
wait_for p_idle || fail "p's turn on 2 did not end: $(j "$u2/v1/sessions/p")"

# ---- a request for a session a claim is loading on 2 -----------------------------------------
# Sent as soon as 2's claim took n (its answer still held by the proxy, its rows not read yet):
# the request takes no lease of its own (that would count the attempt again and fence the
# claim's writer out), waits for the claim's load and is answered from memory; n's turn ends on
# 2, no commit of it refused.
rm -f "$tmp/port3"
"$agentc" serve --db "$uri?schema=slowdb" --provider script --script "$tmp/script3" --script-delay-ms 2000 \
  --lease-ms 1000 --listen 127.0.0.1:0 --port-file "$tmp/port3" 2>"$tmp/w4.err" &
pids+=($!)
p4=$!
wait_for test -s "$tmp/port3" || fail "worker 4 did not start"
u4=http://127.0.0.1:$(cat "$tmp/port3")
j -X POST -d '{"id": "n"}' "$u4/v1/sessions" | jq -e '.id == "n"' >/dev/null || fail "create n on 4"
j -X POST -d '{"content": "go"}' "$u4/v1/sessions/n/messages" | jq -e '.status == "running"' >/dev/null ||
  fail "n's turn on 4"
nrow() { sql "SELECT at_rest || ' ' || holder FROM slowdb.sessions WHERE id = 'local/n'"; }
n_mid() { [ "$(nrow | cut -d' ' -f1)" = 0 ]; }
wait_for n_mid || fail "n's turn on 4 was not stored"
j "$u2/v1/sessions/n" | jq -e '.id == "n"' >/dev/null || fail "n from 2 while 4 runs it" # known on 2
h4=$(nrow | cut -d' ' -f2-)
kill -9 "$p4"
taken=0
for _ in $(seq 1 2000); do # 2's next claim takes n: the row says so at once, 2 learns it 250 ms later
  [ "$(nrow | cut -d' ' -f2-)" != "$h4" ] && { taken=1; break; }
done
[ "$taken" = 1 ] || fail "n was not claimed by 2"
out=$(j -w '\n%{http_code}' "$u2/v1/sessions/n")
[ "$(tail -1 <<<"$out")" = 200 ] && head -1 <<<"$out" | jq -e '.id == "n"' >/dev/null ||
  fail "n from 2 while its claim loaded it: $out"
n_done() { [ "$(nrow | cut -d' ' -f1)" = 1 ]; }
wait_for n_done || fail "n was not finished on 2: $(nrow); $(tail -3 "$tmp/w2.err")"
grep -q "session 'local/n': its worker .* is gone; resumed here" "$tmp/w2.err" || fail "2's claim did not resume n: $(tail -3 "$tmp/w2.err")"
! grep -q "session 'local/n' lost its lease" "$tmp/w2.err" || fail "n's load on 2 was fenced out: $(grep "local/n" "$tmp/w2.err")"

# ---- a request for a session a claim is loading on 2, the load slower than the forward timeout -
# As for n, every packet held 1.5 s from the kill on (the request is sent while the claim's
# answer is held: its lease read comes before the claim's reads), then 8 s from the claim's
# first read on (its other reads take 16 s each): the request waits for the claim's load at
# most --forward-timeout-ms (20 s), then is answered 503 store_error; the claim's load goes on.
rm -f "$tmp/port3"
"$agentc" serve --db "$uri?schema=slowdb" --provider script --script "$tmp/script3" --script-delay-ms 2000 \
  --lease-ms 1000 --listen 127.0.0.1:0 --port-file "$tmp/port3" 2>"$tmp/w5.err" &
pids+=($!)
p5=$!
wait_for test -s "$tmp/port3" || fail "worker 5 did not start"
u5=http://127.0.0.1:$(cat "$tmp/port3")
j -X POST -d '{"id": "o"}' "$u5/v1/sessions" | jq -e '.id == "o"' >/dev/null || fail "create o on 5"
j -X POST -d '{"content": "go"}' "$u5/v1/sessions/o/messages" | jq -e '.status == "running"' >/dev/null ||
  fail "o's turn on 5"
orow() { sql "SELECT at_rest || ' ' || holder FROM slowdb.sessions WHERE id = 'local/o'"; }
o_mid() { [ "$(orow | cut -d' ' -f1)" = 0 ]; }
wait_for o_mid || fail "o's turn on 5 was not stored"
j "$u2/v1/sessions/o" | jq -e '.id == "o"' >/dev/null || fail "o from 2 while 5 runs it" # known on 2
h5=$(orow | cut -d' ' -f2-)
echo 1500 >"$tmp/delay"
kill -9 "$p5"
taken=0
for _ in $(seq 1 2000); do
  [ "$(orow | cut -d' ' -f2-)" != "$h5" ] && { taken=1; break; }
done
[ "$taken" = 1 ] || fail "o was not claimed by 2"
t0=$(date +%s%N)
{ curl -s --max-time 90 -w '\n%{http_code}' "$u2/v1/sessions/o" >"$tmp/late"; } &
lp=$!
reading() { [ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%, agent FROM sessions WHERE id = \$1'")" != 0 ]; }
wait_for reading || fail "2's claim did not read o's rows"
echo 8000 >"$tmp/delay"
wait "$lp"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$(tail -1 "$tmp/late")" = 503 ] &&
  head -1 "$tmp/late" | jq -e '.error.code == "store_error" and (.error.message | test("still loading"))' >/dev/null ||
  fail "o from 2 while its claim's load outlasted the forward timeout: $(cat "$tmp/late") after $ms ms"
[ "$ms" -ge 20000 ] && [ "$ms" -lt 40000 ] || fail "o's request answered 503 after $ms ms (--forward-timeout-ms 20000)"
j "$u2/healthz" | jq -e '.status == "ok"' >/dev/null || fail "/healthz on 2 after o's request"
unblocked
echo "ok (longest /healthz on 2 while it claimed m: $longest s; while it loaded b: $longest_b s, p: $longest2 s; o answered 503 after $ms ms)"
