#!/usr/bin/env bash
# agentc serve without --db: sessions live in a store in memory whose journals keep about
# --max-events events (older ones go at a snapshot). A cursor before what is kept answers 410
# cursor_expired; a reader without a cursor gets the frames after the snapshot, the same as a
# live reader got for them; event numbers go on; the session's answers are all there. (The
# fourth turn is read before the next sweep, 5 s later, drops it in turn.)
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL (memory_cap.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 5 "$tmp/err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
events() {
  awk 'BEGIN{id="";ev=""} /^id: /{id=substr($0,5)} /^event: /{ev=substr($0,8)}
       /^data: /{d=substr($0,7); printf "{\"id\":\"%s\",\"event\":\"%s\",\"data\":%s}\n", id, ev, d; id=""}' "$1"
}
norm() {
  jq -s -c 'reduce .[] as $e ([]; if length > 0 and .[-1].event == $e.event and ($e.event == "text" or $e.event == "reasoning")
    then .[-1] |= ($e + {data: ($e.data + {delta: (.data.delta + $e.data.delta)})}) else . + [$e] end) | .[]'
}
key='(split(".") | map(tonumber) | if length == 1 then . + [0] else . end)'
for i in 1 2 3 4; do jq -cn --arg t "$(printf "turn$i-word%d " $(seq 1 40))" '{content: $t}'; done >"$tmp/script"
"$agentc" serve --max-events 60 --unload-after-ms 10000 --provider script --script "$tmp/script" \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
wait_for test -s "$tmp/port" || fail "server did not start"
url="http://127.0.0.1:$(cat "$tmp/port")"
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
idle() { [ "$(j "$url/v1/sessions/a" | jq -r .status)" = idle ]; }
j -X POST -d '{"id": "a"}' "$url/v1/sessions" >/dev/null
curl -s -N --max-time 30 "$url/v1/sessions/a/events" >"$tmp/live" &
sse=$!
sleep 0.2
for i in 1 2 3; do
  j -X POST -d '{"content": "go"}' "$url/v1/sessions/a/messages" >/dev/null
  sleep 0.3
  wait_for idle || fail "turn $i did not end"
done
# a sweep (every 5 s here) drops what is past the cap, up to the latest snapshot (a turn's end)
expired() { [ "$(j -o "$tmp/body" -w '%{http_code}' "$url/v1/sessions/a/events?starting_after=3")" = 410 ]; }
for _ in $(seq 1 300); do expired && break; sleep 0.1; done # 30 s
expired && jq -e '.error.code == "cursor_expired"' "$tmp/body" >/dev/null || fail "an old cursor: $(cat "$tmp/body")"
j -X POST -d '{"content": "go"}' "$url/v1/sessions/a/messages" >/dev/null
sleep 0.3
wait_for idle || fail "turn 4 did not end"
sleep 0.3
kill "$sse"
curl -s -N --max-time 2 "$url/v1/sessions/a/events" >"$tmp/kept"
first=$(events "$tmp/kept" | head -n1 | jq -r .id)
[ -n "$first" ] && [ "${first%%.*}" -gt 3 ] || fail "the kept frames start at $first"
cmp <(events "$tmp/live" | jq -c --arg f "$first" "select((.id | $key) >= (\$f | $key))" | norm) <(events "$tmp/kept" | norm) \
  || fail "the kept frames differ from what the live reader got for them"
has_event() { events "$1" | jq -s -e "any(.[]; $2)" >/dev/null 2>&1; }
has_event "$tmp/kept" '.event == "turn_done" and (.data.answer | startswith("turn4-word1 "))' || fail "no fourth turn in the kept frames"
j "$url/v1/sessions/a" | jq -e '[.messages[] | select(.role == "assistant")] | length == 4' >/dev/null || fail "the session lost messages"
kill -TERM "$pid"; wait "$pid" || fail "exit status"
pid=
echo ok
