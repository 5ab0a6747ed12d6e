#!/usr/bin/env bash
# workers_pg.sh AGENTC URI CLUSTER_DIR PORT: three `agentc serve` workers on one PostgreSQL
# store. A session created on the first, messaged on the second, streamed on the third: the
# third's frames are the holder's own (ids and bytes, deltas joined as a slow reader's are),
# strictly increasing and equal to a fresh replay; Last-Event-ID on another worker gives the
# rest; a forwarded message answers as a local one (202 started, 409 session_busy, enqueue);
# the holder stopped (SIGSTOP), a forwarded message is answered 504 worker_timeout and is never
# applied; pause and resume from another worker; errors answered as the holder answers them;
# a fork forwarded to the holder answered as a local one (its 201 body, its errors);
# the holder killed mid-turn, another worker claims the session on the next request
# and the stream on the third goes on without a gap; sessions listed, refused again and deleted
# across workers; the database restarted, the wake-up connections are made again; none of it
# waited for the database on a worker's loop (agentc_store_blocking_statements_total 0); the
# database down while the holder writes, the session run from another worker's request once it
# is back.
set -uo pipefail
agentc=$1 uri=$2 dir=$3 port=$4
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (workers_pg.sh:${BASH_LINENO[0]}): $*" >&2; for f in "$tmp"/*.err; do tail -n 5 "$f" >&2; done; exit 1; }
wait_for() { for _ in $(seq 1 300); do "$@" && return 0; sleep 0.05; done; return 1; }
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
sql() { PGOPTIONS='-c client_min_messages=warning' "$psql" -X -q -t -A -h "$dir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
db="$uri?schema=workers"
sql "DROP SCHEMA IF EXISTS workers CASCADE" || fail "psql"
long=$(printf 'word%d ' $(seq 1 40))
# the second answer is long: the forwarded requests made during its turn find it busy on a
# loaded machine too
for i in 1 2 3 4 5 6 7 8; do
  if [ $i = 2 ]; then jq -cn --arg long "$long$long$long$long$long $i" '{content: $long}'
  else jq -cn --arg long "$long $i" '{content: $long}'; fi
done >"$tmp/script"
start() { # start N: worker N, its URL in u$N
  rm -f "$tmp/port$1"
  "$agentc" serve --db "$db" --provider script --script "$tmp/script" --script-delay-ms 25 \
    --listen 127.0.0.1:0 --port-file "$tmp/port$1" --forward-timeout-ms 3000 2>"$tmp/w$1.err" &
  pids+=($!)
  eval "pid$1=$!"
  wait_for test -s "$tmp/port$1" || fail "worker $1 did not start"
  eval "u$1=http://127.0.0.1:$(cat "$tmp/port$1")"
}
start 1
start 2
start 3
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
events() {
  awk 'BEGIN{id="";ev=""} /^id: /{id=substr($0,5)} /^event: /{ev=substr($0,8)}
       /^data: /{d=substr($0,7); printf "{\"id\":\"%s\",\"event\":\"%s\",\"data\":%s}\n", id, ev, d; id=""}' "$1"
}
# norm: the frames with each run of text deltas joined into one, as a slow reader's are
norm() { events "$1" | joined; }
joined() {
  jq -s -c 'reduce .[] as $e ([]; if length > 0 and .[-1].event == $e.event and ($e.event == "text" or $e.event == "reasoning")
    then .[-1] |= ($e + {data: ($e.data + {delta: (.data.delta + $e.data.delta)})}) else . + [$e] end) | .[]'
}
key='(split(".") | map(tonumber) | if length == 1 then . + [0] else . end)'
increasing() { events "$1" | jq -s -e "[.[] | select(.id != \"\") | .id | $key] | . as \$k | all(range(1; length); \$k[.] > \$k[. - 1])" >/dev/null; }
turns_done() { [ "$(grep -c '^event: turn_done' "$1")" -ge "$2" ]; }

# ---- created on 1, streamed on 3 (and on 1, its holder), messaged on 2 ----------------------
j -X POST -d '{"id": "a"}' "$u1/v1/sessions" | jq -e '.id == "a"' >/dev/null || fail "create on 1"
j "$u3/v1/sessions/a" | jq -e '.id == "a" and .status == "idle"' >/dev/null || fail "the session seen from 3: $(j "$u3/v1/sessions/a")"
curl -s -N --max-time 60 "$u3/v1/sessions/a/events" >"$tmp/s3" &
curl -s -N --max-time 60 "$u1/v1/sessions/a/events" >"$tmp/s1" &
sleep 0.3
out=$(j -X POST -d '{"content": "hello"}' "$u2/v1/sessions/a/messages" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 202 ] && head -1 <<<"$out" | jq -e '.id == "a" and .accepted == "started" and .status == "running"' >/dev/null \
  || fail "a message on 2 for a session 1 runs (its 202 shows the state after it, as on 1): $out"
wait_for turns_done "$tmp/s3" 1 || fail "no turn_done on 3's stream: $(tail -c 300 "$tmp/s3")"
wait_for turns_done "$tmp/s1" 1 || fail "no turn_done on 1's stream"
increasing "$tmp/s3" || fail "3's ids do not strictly increase"
[ "$(norm "$tmp/s3")" = "$(norm "$tmp/s1")" ] || fail "3's frames differ from the holder's"
grep -q "$long 1" <<<"$(norm "$tmp/s3")" || fail "the answer's text is not on 3's stream"
curl -s -N --max-time 2 "$u2/v1/sessions/a/events" >"$tmp/r2"
[ "$(norm "$tmp/r2")" = "$(norm "$tmp/s3")" ] || fail "3's live frames differ from a fresh replay on 2"
[ "$(j "$u3/v1/sessions/a")" = "$(j "$u1/v1/sessions/a")" ] || fail "the view on 3 is not the holder's: $(j "$u3/v1/sessions/a" | head -c 300)"
for q in "messages=0" "from=1&limit=1" "limit=0"; do
  [ "$(j "$u3/v1/sessions/a?$q" -w ' %{http_code}')" = "$(j "$u1/v1/sessions/a?$q" -w ' %{http_code}')" ] \
    || fail "the view ?$q on 3 is not the holder's: $(j "$u3/v1/sessions/a?$q" | head -c 300)"
done

# ---- Last-Event-ID on another worker: the rest ---------------------------------------------
mid=$(events "$tmp/s1" | jq -r -s '[.[] | select(.id != "")] | .[(length / 2 | floor)].id')
curl -s -N --max-time 2 -H "Last-Event-ID: $mid" "$u2/v1/sessions/a/events" >"$tmp/rest"
# (a joined delta carries the id of its last: the deltas' ids are not compared)
untagged() { jq -c 'if .event == "text" then del(.id, .data.t_us) else . end'; }
expect=$(events "$tmp/s1" | jq -c -s --arg m "$mid" "(\$m | $key) as \$c | .[] | select(.id != \"\" and (.id | $key) > \$c)" | joined | untagged)
[ "$(norm "$tmp/rest" | untagged)" = "$expect" ] || fail "Last-Event-ID $mid on 2: $(events "$tmp/rest" | jq -c .id | head -3)"

# ---- if_busy across workers ------------------------------------------------------------------
out=$(j -X POST -d '{"content": "second"}' "$u2/v1/sessions/a/messages" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 202 ] || fail "second message: $out"
out=$(j -X POST -d '{"content": "rejected"}' "$u3/v1/sessions/a/messages" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 409 ] && head -1 <<<"$out" | jq -e '.error.code == "session_busy"' >/dev/null \
  || fail "if_busy reject from 3 during a turn: $out"
out=$(j -X POST -d '{"content": "queued", "if_busy": "enqueue"}' "$u3/v1/sessions/a/messages" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 202 ] && head -1 <<<"$out" | jq -e '.accepted == "enqueued"' >/dev/null \
  || fail "if_busy enqueue from 3: $out"
wait_for turns_done "$tmp/s3" 3 || fail "the second and queued turns did not end on 3's stream"
msgs() { j "$u1/v1/sessions/a" | jq -c '[.messages[] | select(.role == "user") | .content]'; }
[ "$(msgs)" = '["hello","second","queued"]' ] || fail "user messages: $(msgs)"

# ---- the holder stopped: 504 worker_timeout, the message withdrawn and never applied -----------
kill -STOP "$pid1"
t0=$(date +%s%N)
out=$(j -X POST -d '{"content": "lost"}' "$u2/v1/sessions/a/messages" -w '\n%{http_code}')
ms=$((($(date +%s%N) - t0) / 1000000))
kill -CONT "$pid1"
[ "$(tail -1 <<<"$out")" = 504 ] && head -1 <<<"$out" | jq -e '.error.code == "worker_timeout" and (.error.message | test("withdrawn"))' >/dev/null \
  || fail "the holder stopped: $out"
[ "$ms" -ge 2900 ] && [ "$ms" -lt 9000 ] || fail "504 after $ms ms (--forward-timeout-ms 3000)"
sleep 1.5
[ "$(msgs)" = '["hello","second","queued"]' ] || fail "a withdrawn message was applied: $(msgs)"
[ "$(sql "SELECT count(*) FROM workers.inbox")" = 0 ] || fail "the inbox keeps rows"

# ---- the holder killed mid-turn: another worker claims it, 3's stream goes on ------------------
texts() { [ "$(grep -c '^event: text' "$tmp/s3")" -ge "$1" ]; }
before=$(grep -c '^event: text' "$tmp/s3")
j -X POST -d '{"content": "long turn"}' "$u2/v1/sessions/a/messages" >/dev/null
wait_for texts $((before + 8)) || fail "the fourth turn does not stream on 3"
kill -9 "$pid1"
out=$(j -X POST -d '{"content": "after", "if_busy": "enqueue"}' "$u2/v1/sessions/a/messages" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 202 ] || fail "a message after the holder died: $out"
wait_for turns_done "$tmp/s3" 5 || fail "the turns did not end on 3's stream: $(tail -c 300 "$tmp/s3")"
increasing "$tmp/s3" || fail "3's ids do not strictly increase across the failover"
curl -s -N --max-time 2 "$u3/v1/sessions/a/events" >"$tmp/r3"
[ "$(norm "$tmp/r3")" = "$(norm "$tmp/s3")" ] || fail "3's frames across the failover differ from a fresh replay"
grep -q '^event: discarded' "$tmp/s3" || fail "the interrupted call's partial text was not discarded"

# ---- listed and deleted across workers ---------------------------------------------------------
j -X POST -d '{"id": "b"}' "$u2/v1/sessions" | jq -e '.id == "b"' >/dev/null || fail "create b on 2"
j "$u3/v1/sessions" | jq -e 'any(.data[]; .id == "b")' >/dev/null || fail "b is not listed on 3: $(j "$u3/v1/sessions")"
[ "$(j -X POST -d '{"id": "b"}' "$u3/v1/sessions" -o /dev/null -w '%{http_code}')" = 409 ] || fail "b created again on 3"
n2=$(j -X POST -d '{}' "$u2/v1/sessions" | jq -r .id)
n3=$(j -X POST -d '{}' "$u3/v1/sessions" | jq -r .id)
[ -n "$n2" ] && [ "$n2" != null ] && [ "$n2" != "$n3" ] || fail "fresh ids on two workers: $n2 $n3"
out=$(j -X DELETE "$u3/v1/sessions/b" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 200 ] || fail "delete b on 3 (2 runs it): $out"
[ "$(j "$u2/v1/sessions/b" -o /dev/null -w '%{http_code}')" = 404 ] || fail "b is still on 2"
[ "$(j "$u3/v1/sessions/b" -o /dev/null -w '%{http_code}')" = 404 ] || fail "b is still on 3"

# ---- the database restarted: every connection made again without a request; the first message
# forwarded after it answered 202 ---------------------------------------------------------------
# the holders' locks (one per live worker's store connection: 2 and 3)
holders() { [ "$(sql "SELECT count(DISTINCT pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid::bigint = 1634160196")" = 2 ]; }
holders || fail "the live workers' holder locks before the restart: $(sql "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")"
bash "$(dirname "$0")/../store/pg_cluster.sh" restart "$dir" "$port" || fail "restart"
back() { grep -q "the wake-up connection is back" "$tmp/w$1.err"; }
wait_for back 2 && wait_for back 3 || fail "the wake-up connections were not made again"
wait_for holders || fail "the store connections (the holders' locks) were not made again by the heartbeats"
out=$(j -X POST -d '{"content": "after restart", "if_busy": "enqueue"}' "$u3/v1/sessions/a/messages" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 202 ] || fail "the first message forwarded after the restart: $out"
wait_for turns_done "$tmp/s3" 6 || fail "the message after the restart did not run: $(tail -c 300 "$tmp/s3")"
j "$u2/v1/sessions/a" | jq -e '[.messages[] | select(.content == "after restart")] | length == 1' >/dev/null \
  || fail "the message after the restart is not there once"
grep -q "the wake-up connection failed: " "$tmp/w3.err" && grep -q "the wake-up connection is back" "$tmp/w3.err" \
  || fail "3 did not say its wake-up connection was lost and made again: $(cat "$tmp/w3.err")"

# ---- pause, resume, an event: a forwarded request answers as the holder answers its own ----------
wait_for turns_done "$tmp/s3" 6
state() { [ "$(j "$u2/v1/sessions/a" | jq -r .states.session)" = "$1" ]; }
out=$(j -X POST "$u3/v1/sessions/a/pause" -w "\n%{http_code}")
[ "$(tail -1 <<<"$out")" = 202 ] && head -1 <<<"$out" | jq -e '.accepted == "pause"' >/dev/null \
  || fail "pause from 3: $out"
wait_for state Paused || fail "not paused by 3's request: $(j "$u2/v1/sessions/a" | jq -c .states)"
out=$(j -X POST "$u3/v1/sessions/a/resume" -w "\n%{http_code}")
[ "$(tail -1 <<<"$out")" = 202 ] && head -1 <<<"$out" | jq -e '.accepted == "resume"' >/dev/null \
  || fail "resume from 3: $out (the session on 2: $(j "$u2/v1/sessions/a" | jq -c '{status, states}'))"
wait_for state Idle || fail "not resumed by 3's request"
for req in "events/nosuch {}" "messages {\"content\":\"x\",\"if_busy\":\"never\"}" "messages {\"text\":1}"; do
  here=$(j -X POST -d "${req#* }" "$u2/v1/sessions/a/${req%% *}" -w ' %{http_code}')
  there=$(j -X POST -d "${req#* }" "$u3/v1/sessions/a/${req%% *}" -w ' %{http_code}')
  [ "$here" = "$there" ] || fail "${req%% *} on 3 (forwarded): $there; on 2: $here"
done
# a fork: made on 2 (local) and through 3 (forwarded to 2, which makes it without waiting), the
# same 201 body but for its id; its errors (a turn that did not end, a bad turn, a taken id, a
# session that does not exist) the same
here=$(j -X POST -d '{"at_turn": 1, "id": "x2"}' "$u2/v1/sessions/a/fork" -w ' %{http_code}')
there=$(j -X POST -d '{"at_turn": 1, "id": "x3"}' "$u3/v1/sessions/a/fork" -w ' %{http_code}')
[ "${here% *}" != "${there% *}" ] && [ "${here##* }" = 201 ] && [ "$here" = "${there//x3/x2}" ] ||
  fail "a fork on 3 (forwarded): $there; on 2: $here"
for v in "$u2" "$u3"; do
  j "$v/v1/sessions/x3" | jq -e '.id == "x3" and ([.messages[] | select(.role == "user")] | length) == 1' >/dev/null ||
    fail "the forwarded fork x3 from $v: $(j "$v/v1/sessions/x3")"
done
for req in "a/fork {\"at_turn\":99}" "a/fork {\"at_turn\":0}" "a/fork {\"at_turn\":1,\"id\":\"x2\"}" \
  "nosuch/fork {\"at_turn\":1}"; do
  here=$(j -X POST -d "${req#* }" "$u2/v1/sessions/${req%% *}" -w ' %{http_code}')
  there=$(j -X POST -d "${req#* }" "$u3/v1/sessions/${req%% *}" -w ' %{http_code}')
  [ "$here" = "$there" ] || fail "${req} on 3 (forwarded): $there; on 2: $here"
done
# ---- /metrics: the wake-ups counted (each notifying commit carries one line or more) -------------
metric() { curl -s --max-time 10 "$1/metrics" | awk -v k="$2" '$1 == k {print $2}'; }
sent=$(metric "$u2" 'agentc_store_notifications_total{direction="sent"}')
got=$(metric "$u3" 'agentc_store_notifications_total{direction="received"}')
lines=$(metric "$u2" 'agentc_store_notify_lines_total{outcome="sent"}')
merged=$(metric "$u2" 'agentc_store_notify_lines_total{outcome="coalesced"}')
[ "${sent:-0}" -gt 0 ] && [ "${got:-0}" -gt 0 ] || fail "wake-ups not counted: sent ${sent:-none} by 2, received ${got:-none} by 3"
[ "${lines:-0}" -ge "$sent" ] || fail "$sent notifying commits for ${lines:-none} lines sent, ${merged:-none} coalesced"
# nothing above (streams, forwarded requests, lists, views, creates, deletes, a claim after a
# kill, a database restart) waited for the database on a loop: no statement, commit or
# connection run synchronously there
for n in 2 3; do
  for k in statement commit connect; do
    v=$(metric "$(eval echo "\$u$n")" "agentc_store_blocking_statements_total{kind=\"$k\"}")
    [ "$v" = 0 ] || fail "worker $n's loop waited for the database (${k}s: ${v:-none})"
  done
done
# ---- the database down while the holder writes the session: the message it could not store is
# answered 503 store_error (not 202); the holder gives the session up once the database is back,
# so a message on the other worker loads and runs it there (not refused session_in_use until
# the lease ends) -------------------------------------------------------------------------------
idle() { j "$u2/v1/sessions/a" | jq -e '.status == "idle"' >/dev/null; }
wait_for idle || fail "a is not idle: $(j "$u2/v1/sessions/a" | jq -c '{status, states}')"
w=$(j "$u2/v1/sessions/a" | jq -r .worker)
h=; for n in 2 3; do grep -qF "worker '$w'" "$tmp/w$n.err" && h=$n; done
[ -n "$h" ] || fail "no worker runs a: $w"
o=$((5 - h)); eval "uh=\$u$h uo=\$u$o"
bash "$(dirname "$0")/../store/pg_cluster.sh" down "$dir" "$port" || fail "down"
out=$(j -X POST -d '{"content": "while down"}' "$uh/v1/sessions/a/messages" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 503 ] && head -1 <<<"$out" | jq -e '.error.code == "store_error"' >/dev/null \
  || fail "a message the holder could not store was answered: $out"
cannot() { grep -q "session 'local/a' cannot be written" "$tmp/w$h.err"; }
wait_for cannot || fail "$h wrote a while the database was down"
bash "$(dirname "$0")/../store/pg_cluster.sh" up "$dir" "$port" || fail "up"
again() { [ "$(grep -c "the wake-up connection is back" "$tmp/w$1.err")" -ge 2 ]; }
wait_for again "$h" && wait_for again "$o" || fail "the wake-up connections after the database was down"
wait_for holders || fail "the store connections (the holders' locks) after the database was down"
out=$(j -X POST -d '{"content": "after down", "if_busy": "enqueue"}' "$uo/v1/sessions/a/messages" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 202 ] || fail "a message on $o for the session $h could not write: $out"
ran() { j "$uo/v1/sessions/a" | jq -e '.status == "idle" and ([.messages[] | select(.content == "after down")] | length == 1)' >/dev/null; }
wait_for ran || fail "the message after the database was down did not run once: $(j "$uo/v1/sessions/a" | jq -c '{status, worker}')"
kill -TERM "$pid2" "$pid3"
wait "$pid2" || fail "worker 2's exit status"
wait "$pid3" || fail "worker 3's exit status"
grep -q agentc-test-pw "$tmp"/*.err && fail "a worker printed the password"
sql "DROP SCHEMA IF EXISTS workers CASCADE"
echo "workers_pg: ok"
