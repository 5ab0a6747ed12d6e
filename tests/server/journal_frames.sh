#!/usr/bin/env bash
# agentc serve: SSE frames are the store journal's. A live client's frames for two turns with
# text deltas, a retried call (discarded, retry), tool calls and a compaction equal what a
# reconnect reads from the store, from the start and from a cursor mid-turn, and again after
# kill -9 and a restart (runs of text deltas compared joined: a reconnect joins the deltas it
# catches up on, as a slow client's are). Ids are N or N.k, strictly increasing. A store that
# fills up ends the stream with an error frame, and nothing it could not hold is streamed.
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (journal_frames.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 5 "$tmp"/*.err >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
. "$(dirname "$0")/../support/sse_read.sh" # read_stream FILE URL N
events() {
  awk 'BEGIN{id="";ev=""} /^id: /{id=substr($0,5)} /^event: /{ev=substr($0,8)}
       /^data: /{d=substr($0,7); printf "{\"id\":\"%s\",\"event\":\"%s\",\"data\":%s}\n", id, ev, d; id=""}' "$1"
}
norm() {
  jq -s -c 'reduce .[] as $e ([]; if length > 0 and .[-1].event == $e.event and ($e.event == "text" or $e.event == "reasoning")
    then .[-1] |= ($e + {data: ($e.data + {delta: (.data.delta + $e.data.delta)})}) else . + [$e] end) | .[]'
}
key='(split(".") | map(tonumber) | if length == 1 then . + [0] else . end)'
has_event() { events "$1" | jq -s -e "any(.[]; $2)" >/dev/null 2>&1; }
call() { printf '{"id": "%s", "name": "calculator", "arguments": "{\\"expression\\": \\"%s\\"}"}' "$1" "$2"; }
{
  echo '{"error": {"status": 503, "message": "unavailable", "retryable": true, "partial": "HALF-ANSWER "}}'
  echo "{\"content\": \"let me compute\", \"tool_calls\": [$(call c1 '6 * 7'), $(call c2 '1 + 1')]}"
  echo '{"content": "the first answer is 42, told in a few words"}'
  echo '{"content": "the second answer, after the context was compacted"}'
} >"$tmp/script"
db="$tmp/s.db"
run=0
start() {
  run=$((run + 1))
  rm -f "$tmp/port"
  "$agentc" serve --db "$db" --provider script --script "$tmp/script" --script-delay-ms 10 \
    --tools builtin:calculator --param backoff_initial=100ms --param compact_threshold=60 \
    --param compaction=clear_tool_results --param compaction_keep=1 \
    --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/run$run.err" &
  pid=$!
  pids+=("$pid")
  wait_for test -s "$tmp/port" || fail "server did not start: $(cat "$tmp/run$run.err")"
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
turn_done() { [ "$(events "$1" | jq -s '[.[] | select(.event == "turn_done")] | length')" -ge "$2" ]; }

start
j -X POST -d '{"id": "a"}' "$url/v1/sessions" >/dev/null
curl -s -N --max-time 30 "$url/v1/sessions/a/events" >"$tmp/live" &
sse=$!
pids+=("$sse")
sleep 0.2
j -X POST -d '{"content": "compute 6 * 7 and 1 + 1"}' "$url/v1/sessions/a/messages" >/dev/null
wait_for turn_done "$tmp/live" 1 || fail "no first turn_done: $(tail -c 400 "$tmp/live")"
j -X POST -d '{"content": "and now?"}' "$url/v1/sessions/a/messages" >/dev/null
wait_for turn_done "$tmp/live" 2 || fail "no second turn_done: $(tail -c 400 "$tmp/live")"
sleep 0.3
kill "$sse"
for ev in text discarded retry tool_call tool_result compacted state_changed turn_done; do
  has_event "$tmp/live" ".event == \"$ev\"" || fail "the live stream has no $ev frame"
done
events "$tmp/live" | jq -s -e "[.[].id | $key] | . == unique" >/dev/null || fail "live ids do not increase"
events "$tmp/live" | jq -s -e '[.[].id | select(test("^[0-9]+(\\.[0-9]+)?$") | not)] == []' >/dev/null || fail "an id is not N or N.k"
# a reconnect from the start, and from a cursor mid-turn
nt=$(grep -c '^event: turn_done' "$tmp/live")
read_stream "$tmp/replay" "$url/v1/sessions/a/events" "$nt" || fail "the replay: $(tail -c 300 "$tmp/replay")"
cmp <(events "$tmp/live" | norm) <(events "$tmp/replay" | norm) || fail "the replay differs from the live stream"
# the reconnect caught up with runs of deltas joined: one frame a run, the id of its last delta
lt=$(events "$tmp/live" | jq -s '[.[] | select(.event == "text")] | length')
rt=$(events "$tmp/replay" | jq -s '[.[] | select(.event == "text")] | length')
[ "$rt" -lt "$lt" ] || fail "the reconnect's deltas were not joined ($rt frames, live $lt)"
last_live=$(events "$tmp/live" | jq -s -r '[.[] | select(.event == "text" and (.data.delta | endswith(" words")))] | first | .id')
events "$tmp/replay" | jq -s -e --arg id "$last_live" 'any(.[]; .event == "text" and .id == $id and (.data.delta | startswith("the first answer is 42")))' >/dev/null \
  || fail "no joined frame with the id of the run's last delta ($last_live)"
cur=$(events "$tmp/live" | jq -s -r '[.[] | select(.event == "tool_call")][0].id')
read_stream "$tmp/after" "$url/v1/sessions/a/events" "$nt" -H "Last-Event-ID: $cur" ||
  fail "the frames after $cur: $(tail -c 300 "$tmp/after")"
cmp <(events "$tmp/live" | jq -c --arg c "$cur" "select((.id | $key) > (\$c | $key))" | norm) <(events "$tmp/after" | norm) \
  || fail "the frames after $cur differ"
# kill -9 and a restart: the same frames from the store
kill -9 "$pid"; wait "$pid" 2>/dev/null
start
read_stream "$tmp/restart" "$url/v1/sessions/a/events" "$nt" || fail "after a restart: $(tail -c 300 "$tmp/restart")"
cmp <(events "$tmp/live" | norm) <(events "$tmp/restart" | norm) || fail "the frames differ after kill -9 and a restart"
kill -TERM "$pid"; wait "$pid" || fail "exit status"

# an event the store cannot hold (its size cap) is never streamed: the stream ends with an
# error frame naming the store's error, and every frame before it is of a committed event
long=$(printf 'word%d ' $(seq 1 400))
jq -cn --arg long "$long" '{content: $long}' >"$tmp/long"
rm -f "$tmp/port"
"$agentc" serve --db "$tmp/cap.db" --db-max-bytes 90000 --provider script --script "$tmp/long" \
  --script-delay-ms 5 --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/cap.err" &
pid=$!
pids+=("$pid")
wait_for test -s "$tmp/port" || fail "server did not start: $(cat "$tmp/cap.err")"
url="http://127.0.0.1:$(cat "$tmp/port")"
j -X POST -d '{"id": "c"}' "$url/v1/sessions" >/dev/null
curl -s -N --max-time 20 "$url/v1/sessions/c/events" >"$tmp/cap" &
sse=$!
sleep 0.2
j -X POST -d '{"content": "hi"}' "$url/v1/sessions/c/messages" >/dev/null
wait "$sse" # the stream ends by itself
events "$tmp/cap" | tail -n1 | jq -e '.event == "error" and .data.code == "store_error" and (.data.message | test("full"))' >/dev/null \
  || fail "the stream did not end with the store's error: $(tail -c 300 "$tmp/cap")"
has_event "$tmp/cap" '.event == "turn_done"' && fail "a turn_done the store could not hold was streamed"
n=$(events "$tmp/cap" | jq -s '[.[] | select(.event == "text")] | length')
last=$(events "$tmp/cap" | jq -s -r '[.[] | select(.id != "")] | last | .id')
stored=$(curl -s --max-time 5 "$url/v1/sessions/c" | jq .last_event_id)
[ "${last%%.*}" -le "$stored" ] || fail "frame $last streamed, the store has $stored events"
[ "$n" -gt 0 ] || fail "nothing was streamed before the store filled"
kill -TERM "$pid"; wait "$pid"
# started again without the cap: an id the client saw names the same frame (nothing it saw is
# told again differently), and what comes after it is new
rm -f "$tmp/port"
"$agentc" serve --db "$tmp/cap.db" --provider script --script "$tmp/long" \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/cap2.err" &
pid=$!
pids+=("$pid")
wait_for test -s "$tmp/port" || fail "server did not start again: $(cat "$tmp/cap2.err")"
url="http://127.0.0.1:$(cat "$tmp/port")"
curl -s -N --max-time 3 "$url/v1/sessions/c/events" >"$tmp/cap2"
cmp <(events "$tmp/cap" | jq -c 'select(.id != "")' | norm) \
    <(events "$tmp/cap2" | jq -c --arg l "$last" "select(.id != \"\" and ((.id | $key) <= (\$l | $key)))" | norm) \
  || fail "after a restart the ids the client saw name other frames"
kill -TERM "$pid"; wait "$pid"
events "$tmp/live" | jq -r .event | sort | uniq -c | tr "\n" " " >&2; echo ok
