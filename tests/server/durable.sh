#!/usr/bin/env bash
# agentc serve --db: sessions and their event logs survive a graceful restart and a kill -9
# mid-turn (the turn resumes by itself), idle sessions are unloaded and loaded again, and a
# client reconnecting with Last-Event-ID after the restart gets exactly what it missed.
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (durable.sh:${BASH_LINENO[0]}): $*" >&2; for f in "$tmp"/*.err; do tail -n 5 "$f" >&2; done; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
. "$(dirname "$0")/../support/sse_read.sh" # read_stream FILE URL N
long=$(printf 'word%d ' $(seq 1 150))
jq -cn --arg long "$long" '{content: $long}' >"$tmp/script"
echo '{"content": "second answer"}' >>"$tmp/script"
echo '{"content": "third answer"}' >>"$tmp/script"
db="$tmp/sessions.db"
run=0
start() {
  run=$((run + 1))
  rm -f "$tmp/port"
  "$agentc" serve --db "$db" --provider script --script "$tmp/script" --script-delay-ms 30 \
    --listen 127.0.0.1:0 --port-file "$tmp/port" --unload-after-ms "${UNLOAD:-600000}" --grace-ms "${GRACE:-10000}" 2>"$tmp/run$run.err" &
  pid=$!
  pids+=("$pid")
  wait_for test -s "$tmp/port" || fail "server did not start: $(cat "$tmp/run$run.err")"
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
events() {
  awk 'BEGIN{id="";ev=""} /^id: /{id=substr($0,5)} /^event: /{ev=substr($0,8)}
       /^data: /{d=substr($0,7); printf "{\"id\":\"%s\",\"event\":\"%s\",\"data\":%s}\n", id, ev, d; id=""}' "$1"
}
# norm: event lines with each run of text (reasoning) deltas joined into one, as a slow
# client's are (the id and time of the last)
norm() {
  jq -s -c 'reduce .[] as $e ([]; if length > 0 and .[-1].event == $e.event and ($e.event == "text" or $e.event == "reasoning")
    then .[-1] |= ($e + {data: ($e.data + {delta: (.data.delta + $e.data.delta)})}) else . + [$e] end) | .[]'
}
# key ID: a frame id N or N.k as [N, k], to compare
key='(split(".") | map(tonumber) | if length == 1 then . + [0] else . end)'
has_event() { events "$1" | jq -s -e "any(.[]; $2)" >/dev/null 2>&1; }

# ---- a turn, then a graceful restart: the session and its log are the same ------------------
start
j -X POST -d '{"id": "a"}' "$url/v1/sessions" | jq -e '.id == "a"' >/dev/null || fail "create"
curl -s -N --max-time 30 "$url/v1/sessions/a/events" >"$tmp/a1" &
sse=$!
j -X POST -d '{"content": "hello"}' "$url/v1/sessions/a/messages" >/dev/null
wait_for has_event "$tmp/a1" '.event == "turn_done"' || fail "no turn_done"
kill "$sse"
kill -TERM "$pid"; wait "$pid" || fail "graceful stop exit status"
[ -s "$db" ] || fail "no database"
start
grep -q "1 sessions, 0 resumed" "$tmp/run$run.err" || fail "restart: $(cat "$tmp/run$run.err")"
# one server per SQLite file: a second is refused at start; the first answers as a worker
out=$("$agentc" serve --db "$db" --provider script --script "$tmp/script" --listen 127.0.0.1:0 2>&1)
[ $? -eq 3 ] && grep -q "served by another agentc serve already" <<<"$out" || fail "a second server on the file: $out"
[ "$(curl -s "$url/healthz")" = '{"status":"ok"}' ] && [ "$(curl -s "$url/readyz")" = '{"status":"ready"}' ] \
  || fail "healthz/readyz: $(curl -s "$url/readyz")"
j "$url/v1/workers" | jq -e '(.data | length) == 1 and .data[0].id == .worker and .data[0].alive
  and .data[0].listen == "127.0.0.1:'"${url##*:}"'"' >/dev/null || fail "/v1/workers: $(j "$url/v1/workers")"
j "$url/v1/sessions" | jq -e '.data[0].id == "a" and .data[0].loaded == false and .data[0].worker == null' >/dev/null || fail "list after restart: $(j "$url/v1/sessions")"
j "$url/v1/sessions/a" >"$tmp/a.json"
jq -e --arg long "$long" '.answer == $long and (.messages | length) == 2 and .states.session == "Idle"
  and (.worker | startswith("agentc "))' "$tmp/a.json" >/dev/null \
  || fail "session after restart: $(head -c 300 "$tmp/a.json")"
read_stream "$tmp/a2" "$url/v1/sessions/a/events" "$(grep -c '^event: turn_done' "$tmp/a1")" ||
  fail "a's stream after the restart: $(tail -c 300 "$tmp/a2")"
cmp <(events "$tmp/a1" | norm) <(events "$tmp/a2" | norm) || fail "the event log differs after the restart"
# the next turn continues the numbering
n=$(events "$tmp/a2" | tail -n1 | jq -r .id)
curl -s -N --max-time 30 -H "Last-Event-ID: $n" "$url/v1/sessions/a/events" >"$tmp/a3" &
sse=$!
j -X POST -d '{"content": "again"}' "$url/v1/sessions/a/messages" >/dev/null
wait_for has_event "$tmp/a3" '.event == "turn_done"' || fail "second turn"
kill "$sse"
events "$tmp/a3" | jq -s -e --arg n "$n" "(.[0].id | $key) > (\$n | $key) and (.[0].id | $key)[0] == (\$n | $key)[0] + 1" >/dev/null \
  || fail "numbering after restart: $n then $(events "$tmp/a3" | head -1)"
has_event "$tmp/a3" '.event == "turn_done" and .data.answer == "second answer"' || fail "the continued session took the wrong turn"

# ---- kill -9 mid-turn: the turn resumes when the server starts again ----------------------
j -X POST -d '{"id": "b"}' "$url/v1/sessions" >/dev/null
curl -s -N --max-time 30 "$url/v1/sessions/b/events" >"$tmp/b1" &
sse=$!
j -X POST -d '{"content": "hello"}' "$url/v1/sessions/b/messages" >/dev/null
wait_for grep -q '^event: text' "$tmp/b1" || fail "b: no text"
sleep 0.3
kill -9 "$pid"
wait "$pid" 2>/dev/null
kill "$sse" 2>/dev/null
last=$(events "$tmp/b1" | tail -n1 | jq -r .id)
has_event "$tmp/b1" '.event == "turn_done"' && fail "the turn ended before the kill"
start
grep -q "2 sessions, 1 resumed" "$tmp/run$run.err" || fail "restart after kill -9: $(cat "$tmp/run$run.err")"
# the client reconnects where it stopped; whatever the crash lost of the log is not invented
curl -s -N --max-time 30 -H "Last-Event-ID: $last" "$url/v1/sessions/b/events" >"$tmp/b2" &
sse=$!
wait_for has_event "$tmp/b2" '.event == "turn_done"' || fail "the interrupted turn did not resume: $(tail -c 300 "$tmp/b2")"
kill "$sse"
has_event "$tmp/b2" '.event == "turn_done" and .data.answer == "'"$long"'"' || fail "resumed answer"
j "$url/v1/sessions/b" | jq -e '(.messages | map(.role)) == ["user", "assistant"]' >/dev/null || fail "b messages after resume"
ids=$( (events "$tmp/b1"; events "$tmp/b2") | jq -s "[.[].id | $key]")
echo "$ids" | jq -e '. == (. | unique)' >/dev/null || fail "duplicated ids after the crash: $ids"
# the call reissued after the crash: a discarded frame voids what the first attempt streamed,
# so the text a client assembles across the crash is the answer once
text=$( (events "$tmp/b1"; events "$tmp/b2") | jq -s -r 'reduce .[] as $e (""; if $e.event == "text" then . + $e.data.delta
    elif $e.event == "discarded" then (if endswith($e.data.text) then .[0:length - ($e.data.text | length)] else "NOT-A-SUFFIX" end) else . end)')
[ "$text" = "$long" ] || fail "assembled across the crash: $text"
has_event "$tmp/b2" '.event == "discarded" and .data.reason == "call_failed"' || fail "no discarded frame for the reissued call"
has_event "$tmp/b2" '.event == "retry" and .data.attempt == 1' || fail "no retry frame for the reissued call"
kill -TERM "$pid"; wait "$pid" || fail "exit status"

# ---- SIGTERM past the grace period: the turn is left in the store and resumes --------------
GRACE=100 start
j -X POST -d '{"id": "c"}' "$url/v1/sessions" >/dev/null
curl -s -N --max-time 30 "$url/v1/sessions/c/events" >"$tmp/c1" &
sse=$!
j -X POST -d '{"content": "hello"}' "$url/v1/sessions/c/messages" >/dev/null
wait_for grep -q '^event: text' "$tmp/c1" || fail "c: no text"
kill -TERM "$pid"; wait "$pid" || fail "SIGTERM past the grace period: exit status"
wait "$sse" 2>/dev/null
has_event "$tmp/c1" '.event == "turn_done" or .event == "stopped"' && fail "the turn was ended at the stop: $(tail -c 300 "$tmp/c1")"
start
grep -q "1 resumed" "$tmp/run$run.err" || fail "the stopped turn was not resumed: $(cat "$tmp/run$run.err")"
wait_for sh -c "curl -s '$url/v1/sessions/c' | jq -e '.status == \"idle\" and (.answer | length) > 0' >/dev/null" \
  || fail "the turn stopped by SIGTERM did not finish after the restart"
kill -TERM "$pid"; wait "$pid" || fail "exit status"

# ---- idle sessions leave memory and come back on the next request -------------------------
UNLOAD=200 start
j "$url/v1/sessions/a" | jq -e '.loaded' >/dev/null || fail "a does not load"
unloaded() { j "$url/v1/sessions" | jq -e '[.data[] | select(.id == "a")][0].loaded == false' >/dev/null; }
wait_for unloaded || fail "a was not unloaded: $(j "$url/v1/sessions")"
j -X POST -d '{"content": "after unload"}' "$url/v1/sessions/a/messages" | jq -e '.accepted == "started"' >/dev/null || fail "message to an unloaded session"
wait_for sh -c "curl -s '$url/v1/sessions/a' | jq -e '.answer == \"third answer\"' >/dev/null" || fail "the reloaded session did not answer"
j "$url/v1/sessions/a" | jq -e '(.messages | length) == 6' >/dev/null || fail "messages after reload: $(j "$url/v1/sessions/a" | jq -c '.messages | map(.role)')"
# delete removes it from the store
j -X DELETE "$url/v1/sessions/b" | jq -e '.deleted' >/dev/null || fail "delete"
kill -TERM "$pid"; wait "$pid" || fail "exit status"
start
j "$url/v1/sessions" | jq -e '[.data[].id] == ["a", "c"]' >/dev/null || fail "b survived its deletion: $(j "$url/v1/sessions")"
"$agentc" sessions list --db "$db" >"$tmp/list" 2>&1
kill -TERM "$pid"; wait "$pid" || fail "exit status"
echo "durable: all checks passed"
