#!/usr/bin/env bash
# agentc serve: text frames are written from the delta itself (plain printable ASCII copied,
# anything else through the JSON encoder): a client that joins the text deltas of a stream,
# live and on a reconnect, gets the answer byte for byte, whatever it holds (quotes,
# backslashes, slashes, control characters, accents, an emoji, a closing script tag).
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (escapes.sh:${BASH_LINENO[0]}): $*" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
. "$(dirname "$0")/../support/sse_read.sh" # read_stream FILE URL N
# the answer, as JSON (jq makes the script line from it)
answer='say "hi" \\ back\\slash / slash	tab\nnew line é ü 😀 </script> {"a": [1]} \u0001 end'
jq -cn --arg a "$(printf '%b' "$answer")" '{content: $a}' >"$tmp/script"
expected=$(jq -r .content "$tmp/script")
"$agentc" serve --provider script --script "$tmp/script" --script-delay-ms 1 \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
wait_for test -s "$tmp/port" || fail "server did not start: $(cat "$tmp/err")"
url="http://127.0.0.1:$(cat "$tmp/port")"
curl -s --max-time 10 -H 'Content-Type: application/json' -X POST -d '{"id": "e"}' "$url/v1/sessions" >/dev/null
curl -s -N --max-time 20 "$url/v1/sessions/e/events" >"$tmp/live" &
sse=$!
sleep 0.2
curl -s --max-time 10 -H 'Content-Type: application/json' -X POST -d '{"content": "go"}' "$url/v1/sessions/e/messages" >/dev/null
done_in() { sed -n '/^event: turn_done$/{n;s/^data: //p}' "$1" | jq -e .answer >/dev/null 2>&1; } # read whole
wait_for done_in "$tmp/live" || fail "no turn_done: $(tail -c 400 "$tmp/live")"
kill "$sse" 2>/dev/null
read_stream "$tmp/again" "$url/v1/sessions/e/events?starting_after=0" 1 || fail "again: $(tail -c 300 "$tmp/again")"
for f in live again; do
  datas() { awk -v ev="$2" '/^event: /{e=substr($0,8)} /^data: /{if (e == ev) print substr($0,7)}' "$1"; }
  got=$(datas "$tmp/$f" text | jq -j .delta) || fail "$f: a text frame is not JSON"
  [ "$got" == "$expected" ] || fail "$f: joined text differs: $(printf '%q' "$got")"
  said=$(datas "$tmp/$f" turn_done | jq -r .answer)
  [ "$said" == "$expected" ] || fail "$f: turn_done's answer differs: $(printf '%q' "$said")"
  n=$(datas "$tmp/$f" text | wc -l)
  [ "$f" == again ] || [ "$n" -gt 1 ] || fail "live: one text frame only ($n): nothing was streamed delta by delta"
done
echo "ok: live and replayed text frames join to the answer byte for byte"
