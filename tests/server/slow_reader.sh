#!/usr/bin/env bash
# agentc serve: one reader of a session that stops reading does not delay the others. Three
# readers stream one long answer (about 15 MB of frames); one of them stops reading from the
# start. The two that read get every frame and the turn's end while the stopped one still
# reads nothing; once it reads again it gets the whole answer, its queued text deltas joined
# into fewer frames (the id and time of the last), the same events as the others got.
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
wait_for() { for _ in $(seq 1 2400); do "$@" && return 0; sleep 0.05; done; return 1; } # 120 s
# ended FILE: FILE ends with a whole turn_done frame (only its tail read: the file is large)
ended() {
  [ "$(tail -c 4000000 "$1" | grep -c '^event: turn_done$')" -ge 1 ] && [ "$(tail -c 2 "$1" | od -An -tx1 | tr -d ' ')" = 0a0a ]
}
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
  curl -s -N --max-time 180 "$url/v1/sessions/s/events" >"$tmp/fast$k" &
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
  wait_for ended "$tmp/fast$k" || fail "reader $k: no turn_done beside a stopped reader: $(tail -c 300 "$tmp/fast$k")"
done
[ ! -e "$tmp/slow.raw" ] || fail "the stopped reader read already"
touch "$tmp/go"
wait "$slow_pid" || fail "the stopped reader: no turn_done once it read again: $(tail -c 300 "$tmp/slow.raw")"
sed '1,/^\r$/d' "$tmp/slow.raw" >"$tmp/slow" # its response's head off
for f in fast1 fast2 slow; do events "$tmp/$f" >"$tmp/$f.ev"; done
# the reference: what a reader that kept up got (a reader's frames are the journal's:
# server_journal_frames); read again from the store, 146,000 events take long to replay
norm <"$tmp/fast1.ev" >"$tmp/full.norm"
for f in fast1 fast2 slow; do
  jq -s -e '[.[].id | split(".") | map(tonumber) | if length == 1 then . + [0] else . end] | . == (. | unique)' \
    "$tmp/$f.ev" >/dev/null || fail "$f: ids not increasing"
  [ "$f" = fast1 ] || cmp -s <(norm <"$tmp/$f.ev") "$tmp/full.norm" || fail "$f: its frames are not the other readers'"
done
jq -s -e --rawfile long "$tmp/long" '([.[] | select(.event == "text") | .data.delta] | add) == $long' \
  "$tmp/full.norm" >/dev/null || fail "the text is not the answer"
texts() { jq -s '[.[] | select(.event == "text")] | length' "$1"; }
fast=$(texts "$tmp/fast1.ev") slow=$(texts "$tmp/slow.ev")
[ "$fast" -gt 1000 ] || fail "the readers got $fast text frames: nothing was streamed delta by delta"
[ "$slow" -lt $((fast / 2)) ] || fail "the stopped reader's $slow text frames (a reader's $fast) were not joined"
kill -TERM "$pid"
wait "$pid" || fail "server exit: $(cat "$tmp/err")"
pid=
echo "ok: two readers got all $fast text frames beside a stopped one; it got the answer in $slow once it read"
