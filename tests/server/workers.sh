#!/usr/bin/env bash
# workers.sh AGENTC URI CLUSTER_DIR PORT [TRIALS]: three `agentc serve` workers on one
# PostgreSQL database, leases of 1 s. /healthz and /readyz answer without a token, revealing
# nothing else; /v1/workers lists the three (with a token). Then TRIALS times (default 3): the
# worker running turns (each a non-idempotent tool that writes a ledger, then an answer) is
# killed with SIGKILL at a random moment, its sessions are finished by the survivors within the
# lease and a heartbeat or so, every turn completes exactly once, no ledger line twice, no
# session left busy, each session's stream on a survivor goes on across the kill (its ids
# strictly increasing, its frames a fresh replay's on the other survivor); the killed worker comes back under its id. A worker paused (SIGSTOP) past
# its lease: a survivor finishes its turn, and when it continues its writes are refused, the
# session intact. SIGTERM drains: /readyz answers 503 at once (on a connection kept open), the
# worker exits 0 after its grace and a survivor finishes the turn it left at once. The database stopped: workers report not ready, then ready again
# once it is back. FAILOVER_OUT=FILE appends each affected session's failover time (ms).
set -uo pipefail
agentc=$1 uri=$2 dir=$3 port=$4 trials=${5:-3}
command -v curl >/dev/null && command -v jq >/dev/null || { echo "curl and jq needed" >&2; exit 1; }
tmp=$(mktemp -d)
declare -A pid url
streams=()
cleanup() {
  for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; done
  for p in "${streams[@]}"; do kill "$p" 2>/dev/null; done
  [ -n "${WORKERS_LOG:-}" ] && tail -n +1 "$tmp"/w*.err >"$WORKERS_LOG"
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL (workers.sh:${BASH_LINENO[0]}): $*" >&2
  for f in "$tmp"/*.err; do echo "== $f" >&2; tail -n 8 "$f" >&2; done
  exit 1
}
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
sql() { PGOPTIONS='-c client_min_messages=warning' "$bin/psql" -X -q -t -A -h "$dir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
db="$uri?schema=workers"
sql "DROP SCHEMA IF EXISTS workers CASCADE" || fail "psql"
tok=workers-token-$RANDOM$RANDOM$RANDOM
printf '%s ops\n' "$tok" >"$tmp/tokens"
cat >"$tmp/tools.json" <<JSON
{"tools": [
 {"name": "append", "description": "writes its call to the ledger", "timeout": "10s",
  "command": ["sh", "-c", "cat >/dev/null; echo \"\$AGENTC_SESSION_ID \$AGENTC_TOOL_CALL_ID\" >>'$tmp/ledger'; sleep 0.1; echo written"]}
]}
JSON
words=$(printf 'w%d ' $(seq 1 40))
jq -cn --arg w "$words" '{content: $w, tool_calls: [{id: "a1", name: "append", arguments: "{}"}]}' >"$tmp/script"
jq -cn --arg w "$words" '{content: ($w + "all done")}' >>"$tmp/script"
touch "$tmp/ledger"
# start NAME [options]: the worker NAME (its id) on a port of its own
start() {
  local n=$1
  shift
  rm -f "$tmp/$n.port"
  "$agentc" serve --db "$db" --worker-id "$n" --lease-ms 1000 --listen 127.0.0.1:0 \
    --port-file "$tmp/$n.port" --tokens "$tmp/tokens" --provider script --script "$tmp/script" \
    --script-delay-ms 20 --tools "$tmp/tools.json" "$@" 2>>"$tmp/$n.err" &
  pid[$n]=$!
  wait_for test -s "$tmp/$n.port" || fail "$n did not start: $(cat "$tmp/$n.err")"
  url[$n]="http://127.0.0.1:$(cat "$tmp/$n.port")"
}
j() { curl -s --max-time 10 -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' "$@"; }
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }
now_ms() { date +%s%3N; }
busy() { sql "SELECT count(*) FROM workers.sessions WHERE at_rest = 0"; }
. "$(dirname "$0")/frames_lib.sh"
start w1
start w2
start w3

# ---- operations ------------------------------------------------------------------------------
[ "$(code "${url[w1]}/healthz")" = 200 ] || fail "healthz"
[ "$(code "${url[w1]}/readyz")" = 200 ] || fail "readyz"
[ "$(curl -s "${url[w1]}/readyz")" = '{"status":"ready"}' ] || fail "readyz reveals more: $(curl -s "${url[w1]}/readyz")"
[ "$(code "${url[w1]}/v1/workers")" = 401 ] || fail "/v1/workers without a token"
[ "$(code -X POST "${url[w1]}/healthz")" = 405 ] || fail "POST /healthz"
j "${url[w2]}/v1/workers" >"$tmp/workers"
jq -e '.worker == "w2" and .data[0].id == "w2" and ([.data[].id] | sort) == ["w1", "w2", "w3"]
       and all(.data[]; .alive and (.listen | startswith("127.0.0.1:")) and .last_heartbeat_ms > 0)' \
  "$tmp/workers" >/dev/null || fail "/v1/workers: $(cat "$tmp/workers")"
out=$("$agentc" serve --db "$db" --worker-id w1 --listen 127.0.0.1:0 --provider script \
  --script "$tmp/script" 2>&1) && fail "a second w1 started"
grep -q "a live worker runs as 'w1' already" <<<"$out" || fail "second w1: $out"
out=$("$agentc" serve --db "$db" --worker-id "$(printf 'a\tb')" 2>&1); [ $? = 2 ] && grep -q "printable" <<<"$out" || fail "--worker-id with a tab: $out"
out=$("$agentc" serve --db "$db" --lease-ms 5 2>&1); [ $? = 2 ] && grep -q "at least 30" <<<"$out" || fail "--lease-ms 5: $out"

# ---- kill -9 of the worker running turns, at random moments ----------------------------------
RANDOM=$$
sessions=()
next() { echo "w$(( (${1#w} + $2 - 1) % 3 + 1 ))"; } # next W K: the worker K after W
for t in $(seq 1 "$trials"); do
  victim=w$((RANDOM % 3 + 1))
  ids=()
  for k in 1 2 3; do
    id="t$t-$k"
    j -X POST -d "{\"id\": \"$id\"}" "${url[$victim]}/v1/sessions" | jq -e '.worker == "'$victim'"' >/dev/null \
      || fail "trial $t: create $id on $victim"
    # streamed on the next worker, a survivor: its stream goes on across the kill
    curl -s -N --max-time 60 -H "Authorization: Bearer $tok" "${url[$(next "$victim" 1)]}/v1/sessions/$id/events" \
      >"$tmp/st-$id" &
    streams+=($!)
    wait_for grep -qs '^id: 1$' "$tmp/st-$id" || fail "trial $t: no stream of $id on $(next "$victim" 1)"
    j -X POST -d '{"content": "go"}' "${url[$victim]}/v1/sessions/$id/messages" | jq -e '.accepted' >/dev/null \
      || fail "trial $t: message $id"
    ids+=("$id")
  done
  sessions+=("${ids[@]}")
  ms=$((t == 1 ? 300 : RANDOM % 700)) # a turn takes about 800 ms: the first trial kills mid-turn
  sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  killed=$(now_ms)
  kill -9 "${pid[$victim]}"
  wait "${pid[$victim]}" 2>/dev/null
  # every session finishes (on a survivor), none left busy
  for id in "${ids[@]}"; do
    wait_for sh -c "[ \"\$(PGOPTIONS='-c client_min_messages=warning' '$bin/psql' -X -q -t -A -h '$dir/sock' -p $port -U agentc -d agentc \
      -c \"SELECT at_rest FROM workers.sessions WHERE id = 'ops/$id'\")\" = 1 ]" \
      || fail "trial $t ($victim killed after $ms ms): $id did not finish: $(sql "SELECT status, at_rest, holder FROM workers.sessions WHERE id = 'ops/$id'")"
    first=$(sql "SELECT min(t_ms) FROM workers.events WHERE session = 'ops/$id' AND t_ms >= $killed")
    [ -n "$first" ] && [ -n "${FAILOVER_OUT:-}" ] && echo "$((first - killed))" >>"$FAILOVER_OUT"
  done
  # each stream's ids strictly increase and its frames are a fresh replay's (on the other survivor)
  for id in "${ids[@]}"; do
    wait_for turns_done "$tmp/st-$id" 1 || fail "trial $t: no turn_done on $id's stream: $(tail -c 300 "$tmp/st-$id")"
    increasing "$tmp/st-$id" || fail "trial $t: $id's stream ids do not strictly increase"
    curl -s -N --max-time 2 -H "Authorization: Bearer $tok" "${url[$(next "$victim" 2)]}/v1/sessions/$id/events" >"$tmp/rp-$id"
    [ "$(norm "$tmp/st-$id")" = "$(norm "$tmp/rp-$id")" ] \
      || fail "trial $t: $id's stream differs from a replay: $(diff <(norm "$tmp/st-$id" | jq -c .id) <(norm "$tmp/rp-$id" | jq -c .id) | head -5)"
  done
  start "$victim" # back under its id
done
for p in "${streams[@]}"; do kill "$p" 2>/dev/null; done
[ "$(busy)" = 0 ] || fail "sessions left busy: $(sql "SELECT id, status FROM workers.sessions WHERE at_rest = 0")"
for id in "${sessions[@]}"; do
  "$agentc" sessions show "ops/$id" --db "$db" --json >"$tmp/show" 2>"$tmp/show.err" || fail "show $id: $(cat "$tmp/show.err")"
  # the turn completed once: one user message, one answer, every tool call answered once
  jq -e --arg w "$words" '.status == "idle" and .at_rest and .session.answer == ($w + "all done")
         and ([.session.conversation.messages[] | select(.role == "user")] | length) == 1
         and ([.session.conversation.messages[] | select(.role == "assistant" and ((.tool_calls // []) | length) == 0)] | length) == 1
         and ([.session.conversation.messages[] | select(.role == "tool") | .tool_call_id] | . == unique and length == 1)' \
    "$tmp/show" >/dev/null || fail "$id: $(jq -c '{status, at_rest, m: .session.conversation.messages}' "$tmp/show")"
done
dups=$(cut -d' ' -f1,2 "$tmp/ledger" | sort | uniq -d)
[ -z "$dups" ] || fail "a non-idempotent call ran twice: $dups"
grep -q "' is gone; resumed here" "$tmp"/w*.err || fail "no survivor said it resumed a session"

# ---- SIGSTOP past the lease, then SIGCONT: the zombie's writes are refused ------------------
j -X POST -d '{"id": "z"}' "${url[w1]}/v1/sessions" >/dev/null
j -X POST -d '{"content": "go"}' "${url[w1]}/v1/sessions/z/messages" | jq -e '.accepted' >/dev/null || fail "z: message"
wait_for sh -c "[ \"\$(curl -s -H 'Authorization: Bearer $tok' '${url[w1]}/v1/sessions/z' | jq -r '.states.session')\" != Idle ]" || fail "z did not start"
sleep 0.2
kill -STOP "${pid[w1]}"
wait_for sh -c "[ \"\$(PGOPTIONS='-c client_min_messages=warning' '$bin/psql' -X -q -t -A -h '$dir/sock' -p $port -U agentc -d agentc \
  -c \"SELECT at_rest FROM workers.sessions WHERE id = 'ops/z'\")\" = 1 ]" || fail "z was not finished by a survivor"
events=$(sql "SELECT events FROM workers.sessions WHERE id = 'ops/z'")
holder=$(sql "SELECT holder FROM workers.sessions WHERE id = 'ops/z'")
kill -CONT "${pid[w1]}"
# its commit refused by the fence, or (stopped inside a commit's transaction) that transaction
# ended by the server past idle_in_transaction_session_timeout: either way nothing of it lands
wait_for grep -qE "session 'ops/z' (lost its lease|cannot be written)" "$tmp/w1.err" \
  || fail "the zombie did not find its lease lost or its commit refused"
grep -q "session 'ops/z' is no longer run here" "$tmp/w1.err" || fail "the zombie did not drop the session"
sleep 1.5
[ "$(sql "SELECT events FROM workers.sessions WHERE id = 'ops/z'")" = "$events" ] || fail "the zombie wrote to z"
[ "$(sql "SELECT count(*) FROM workers.events WHERE session = 'ops/z'")" = "$events" ] || fail "z's journal has gaps or more"
[ "$(sql "SELECT holder FROM workers.sessions WHERE id = 'ops/z'")" = "$holder" ] || fail "z's lease moved back"
"$agentc" sessions show ops/z --db "$db" --json | jq -e --arg w "$words" '.session.answer == ($w + "all done")' >/dev/null || fail "z's answer"
[ -z "$(cut -d' ' -f1,2 "$tmp/ledger" | sort | uniq -d)" ] || fail "the zombie ran a call twice"
[ "$(code "${url[w1]}/readyz")" = 200 ] || fail "w1 after SIGCONT is not ready"

# ---- SIGTERM drains: the turn it leaves is finished elsewhere at once -----------------------
kill -TERM "${pid[w2]}"; wait "${pid[w2]}" || fail "w2: SIGTERM exit status"
start w2 --grace-ms 1000 --script-delay-ms 200
j -X POST -d '{"id": "d"}' "${url[w2]}/v1/sessions" >/dev/null
j -X POST -d '{"content": "go"}' "${url[w2]}/v1/sessions/d/messages" | jq -e '.accepted' >/dev/null || fail "d: message"
# a connection kept open across the signal: ready before it, not ready while draining
p2=${url[w2]##*:}
exec 5<>"/dev/tcp/127.0.0.1/$p2"
printf 'GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' "$p2" >&5
read -t 5 -r -d '}' reply <&5; grep -q '"ready"' <<<"$reply" || fail "readyz before the drain: $reply"
sleep 0.2
kill -TERM "${pid[w2]}"
sleep 0.2
printf 'GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n' "$p2" >&5
read -t 5 -r -d '}' reply <&5
grep -q "^HTTP/1.1 503" <<<"$reply" && grep -q '"stopping"' <<<"$reply" || fail "readyz while draining: $reply"
exec 5<&-
wait "${pid[w2]}" || fail "w2: SIGTERM past the grace: exit status"
stopped=$(now_ms)
[ "$(sql "SELECT holder FROM workers.sessions WHERE id = 'ops/d'")" != w2 ] || fail "w2 kept d's lease"
sql "SELECT count(*) FROM workers.workers WHERE id = 'w2'" | grep -qx 0 || fail "w2's row stayed"
wait_for sh -c "[ \"\$(PGOPTIONS='-c client_min_messages=warning' '$bin/psql' -X -q -t -A -h '$dir/sock' -p $port -U agentc -d agentc \
  -c \"SELECT at_rest FROM workers.sessions WHERE id = 'ops/d'\")\" = 1 ]" || fail "d was not finished after the drain"
first=$(sql "SELECT min(t_ms) FROM workers.events WHERE session = 'ops/d' AND t_ms >= $stopped")
[ $((first - stopped)) -lt 1000 ] || fail "d waited $((first - stopped)) ms for a survivor (its lease was released)"
start w2

# ---- the database stopped mid-turn: not ready; back: ready, the turn finished ----------------
j -X POST -d '{"id": "r"}' "${url[w3]}/v1/sessions" >/dev/null
j -X POST -d '{"content": "go"}' "${url[w3]}/v1/sessions/r/messages" | jq -e '.accepted' >/dev/null || fail "r: message"
sleep 0.3
as "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null || fail "pg stop"
wait_for sh -c "[ \$(curl -s -o /dev/null -w '%{http_code}' '${url[w3]}/readyz') = 503 ]" || fail "w3 ready without its database"
[ "$(code "${url[w3]}/healthz")" = 200 ] || fail "healthz without the database"
as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir/sock -c fsync=off" start >/dev/null || fail "pg start"
wait_for sh -c "[ \$(curl -s -o /dev/null -w '%{http_code}' '${url[w3]}/readyz') = 200 ]" || fail "w3 not ready again"
wait_for sh -c "[ \"\$(PGOPTIONS='-c client_min_messages=warning' '$bin/psql' -X -q -t -A -h '$dir/sock' -p $port -U agentc -d agentc \
  -c \"SELECT at_rest FROM workers.sessions WHERE id = 'ops/r'\")\" = 1 ]" || fail "r did not finish after the restart"
"$agentc" sessions show ops/r --db "$db" --json | jq -e --arg w "$words" '.session.answer == ($w + "all done")
  and ([.session.conversation.messages[] | select(.role == "tool")] | length) == 1' >/dev/null || fail "r after the restart"
j -X POST -d '{"id": "after"}' "${url[w3]}/v1/sessions" | jq -e '.id == "after"' >/dev/null || fail "create after the restart"
j -X POST -d '{"content": "go"}' "${url[w3]}/v1/sessions/after/messages" | jq -e '.accepted' >/dev/null || fail "message after the restart"
wait_for sh -c "[ \"\$(PGOPTIONS='-c client_min_messages=warning' '$bin/psql' -X -q -t -A -h '$dir/sock' -p $port -U agentc -d agentc \
  -c \"SELECT at_rest FROM workers.sessions WHERE id = 'ops/after'\")\" = 1 ]" || fail "after did not finish"

for n in w1 w2 w3; do kill -TERM "${pid[$n]}"; wait "${pid[$n]}" || fail "$n: exit status"; done
pid=()
echo "workers: all checks passed ($trials kill trials)"
