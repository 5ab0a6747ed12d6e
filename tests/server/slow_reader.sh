#!/usr/bin/env bash
# agentc serve: one reader of a session that stops reading does not delay the others. Three
# readers stream one long answer (about 15 MB of frames); one of them stops reading from the
# start. The two that read get every frame and the turn's end while the stopped one still
# reads nothing; once it reads again it gets the whole answer, its queued text deltas joined
# into fewer frames (the id and time of the last), the same events as the journal read again.
set -uo pipefail
agentc=$1
stalled=$2 # sse_stalled PORT PATH GATE OUT
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pid=
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL (slow_reader.sh:${BASH_LINENO[0]}): $*" >&2; exit 1; }
wait_for() { for _ in $(seq 1 1200); do "$@" && return 0; sleep 0.05; done; return 1; } # 60 s
. "$(dirname "$0")/../support/sse_read.sh" # turns_read FILE N
# events FILE: the frames of an SSE capture as JSON lines {id, event, data}
events() {
  awk 'BEGIN{id="";ev=""} /^id: /{id=substr($0,5)} /^event: /{ev=substr($0,8)}
       /^data: /{d=substr($0,7); printf "{\"id\":\"%s\",\"event\":\"%s\",\"data\":%s}\n", id, ev, d; id=""}' "$1"
}
# norm: each run of text (reasoning) frames joined into one, as a slow reader's are
norm() {
  jq -s -c 'reduce .[] as $e ([]; if length > 0 and .[-1].event == $e.event and ($e.event == "text" or $e.event == "reasoning")
    then .[-1] |= ($e + {data: ($e.data + {delta: (.data.delta + $e.data.delta)})}) else . + [$e] end) | .[]'
}
texts() { events "$1" | jq -s '[.[] | select(.event == "text")] | length'; }
# the answer: 1.75 MB of text, 146,000 deltas of 12 bytes (the kernel takes the first few MB
# of a stopped reader's frames into its socket buffers; the rest waits in the server)
seq 1 250000 | awk '{printf "w%05d ", $1}' >"$tmp/long"
jq -cn --rawfile t "$tmp/long" '{content: $t}' >"$tmp/script"
"$agentc" serve --provider script --script "$tmp/script" --script-delay-ms 0 \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
wait_for test -s "$tmp/port" || fail "server did not start: $(cat "$tmp/err")"
url="http://127.0.0.1:$(cat "$tmp/port")"
curl -s --max-time 10 -H 'Content-Type: application/json' -X POST -d '{"id": "s"}' "$url/v1/sessions" >/dev/null
for k in 1 2; do
  curl -s -N --max-time 120 "$url/v1/sessions/s/events" >"$tmp/fast$k" &
  pids+=("$!")
done
# the stopped reader: a 4 KB receive buffer, nothing read until the gate opens
"$stalled" "$(cat "$tmp/port")" /v1/sessions/s/events "$tmp/go" "$tmp/slow.raw" &
slow_pid=$!
pids+=("$slow_pid")
wait_for grep -q '^event: state_changed' "$tmp/fast1" || fail "no first frame: $(cat "$tmp/err")"
sleep 0.3 # the stopped reader's request is in
curl -s --max-time 10 -H 'Content-Type: application/json' -X POST -d '{"content": "go"}' \
  "$url/v1/sessions/s/messages" >/dev/null
for k in 1 2; do
  wait_for turns_read "$tmp/fast$k" 1 || fail "reader $k: no turn_done beside a stopped reader: $(tail -c 300 "$tmp/fast$k")"
done
[ ! -e "$tmp/slow.raw" ] || fail "the stopped reader read already"
touch "$tmp/go"
wait "$slow_pid" || fail "the stopped reader: no turn_done once it read again: $(tail -c 300 "$tmp/slow.raw")"
sed '1,/^\r$/d' "$tmp/slow.raw" >"$tmp/slow" # its response's head off
read_stream "$tmp/full" "$url/v1/sessions/s/events?starting_after=0" 1 || fail "the journal read again"
events "$tmp/full" | norm >"$tmp/full.norm"
for f in fast1 fast2 slow; do
  ids=$(events "$tmp/$f" | jq -s -c '[.[].id | split(".") | map(tonumber) | if length == 1 then . + [0] else . end]')
  echo "$ids" | jq -e '. == (. | unique)' >/dev/null || fail "$f: ids not increasing"
  cmp -s <(events "$tmp/$f" | norm) "$tmp/full.norm" || fail "$f: its frames are not the journal's"
  events "$tmp/$f" | jq -s -e --rawfile long "$tmp/long" '([.[] | select(.event == "text") | .data.delta] | add) == $long' \
    >/dev/null || fail "$f: its text is not the answer"
done
fast=$(texts "$tmp/fast1") slow=$(texts "$tmp/slow")
[ "$fast" -gt 1000 ] || fail "the readers got $fast text frames: nothing was streamed delta by delta"
[ "$slow" -lt $((fast / 2)) ] || fail "the stopped reader's $slow text frames (a reader's $fast) were not joined"
kill -TERM "$pid"
wait "$pid" || fail "server exit: $(cat "$tmp/err")"
pid=
echo "ok: two readers got all $fast text frames beside a stopped one; it got the answer in $slow once it read"
