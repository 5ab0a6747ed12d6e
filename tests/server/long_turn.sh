#!/usr/bin/env bash
# agentc serve: a reader of a session whose turn streamed 50,000 deltas gets its frames (the
# deltas joined, the answer whole, turn_done) within seconds, and the server answers others
# meanwhile. Joining a reader's queued deltas costs what is appended (it cost the whole joined
# text per delta: 30 s for 100,000 deltas, the server answering no one).
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL (long_turn.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 5 "$tmp/err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
head -c 600000 /dev/zero | tr '\0' x >"$tmp/answer"
jq -Rc '{content: .}' "$tmp/answer" >"$tmp/script"
"$agentc" serve --max-events 1000000 --provider script --script "$tmp/script" \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
wait_for test -s "$tmp/port" || fail "server did not start"
url="http://127.0.0.1:$(cat "$tmp/port")"
j() { curl -s --max-time 20 -H 'Content-Type: application/json' "$@"; }
j -X POST -d '{"id": "a"}' "$url/v1/sessions" >/dev/null
j -X POST -d '{"content": "go"}' "$url/v1/sessions/a/messages" >/dev/null
idle() { [ "$(j "$url/v1/sessions/a" | jq -r .status)" = idle ]; }
wait_for idle || fail "the turn did not end"
n=$(j "$url/v1/sessions/a" | jq .last_event_id)
[ "$n" -gt 50000 ] || fail "only $n events"
curl -s -N --max-time 30 "$url/v1/sessions/a/events" >"$tmp/ev" &
sse=$!
sleep 0.3
start=$(date +%s%N)
j -o /dev/null "$url/v1/sessions" || fail "the server does not answer"
ms=$((($(date +%s%N) - start) / 1000000))
[ "$ms" -lt 2000 ] || fail "the server answered another request after $ms ms"
# turn_done read whole: its data line (600 kB) comes in many reads after its event line
got() { sed -n '/^event: turn_done$/{n;s/^data: //p}' "$tmp/ev" | jq -e .answer >/dev/null 2>&1; }
for _ in $(seq 1 50); do got && break; sleep 0.1; done
got || fail "no turn_done 5 s after the reader connected"
kill "$sse" 2>/dev/null
sed -n 's/^data: //p' "$tmp/ev" | jq -j 'select(.delta) | .delta' >"$tmp/text"
cmp -s "$tmp/text" "$tmp/answer" || fail "the joined deltas are not the answer ($(wc -c <"$tmp/text") bytes)"
sed -n 's/^data: //p' "$tmp/ev" | jq -j 'select(.answer) | .answer' >"$tmp/final"
cmp -s "$tmp/final" "$tmp/answer" || fail "turn_done's answer"
kill -TERM "$pid"; wait "$pid" || fail "exit status"

# a frame over a reader's queue cap (8 MB; a tool's 9 MB output): it is sent, and so is what
# follows (the stream ended before it, and a reconnect with its Last-Event-ID did the same)
cat >"$tmp/tools.json" <<'JSON'
{"tools": [{"name": "big", "description": "prints 9 MB", "max_output": "20MB",
  "command": ["sh", "-c", "head -c 9000000 /dev/zero | tr '\\0' x"],
  "parameters": {"type": "object", "properties": {}}}]}
JSON
printf '%s\n' '{"tool_calls":[{"id":"c1","name":"big","arguments":"{}"}]}' '{"content":"done"}' >"$tmp/script"
rm -f "$tmp/port"
"$agentc" serve --tools "$tmp/tools.json" --provider script --script "$tmp/script" \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
wait_for test -s "$tmp/port" || fail "server did not start"
url="http://127.0.0.1:$(cat "$tmp/port")"
j -X POST -d '{"id": "a"}' "$url/v1/sessions" >/dev/null
j -X POST -d '{"content": "go"}' "$url/v1/sessions/a/messages" >/dev/null
wait_for idle || fail "the turn with the big tool output did not end"
# as a client does: reconnect with the last id read while the stream ends before turn_done
: >"$tmp/ev"
for _ in 1 2 3; do
  last=$(sed -n 's/^id: //p' "$tmp/ev" | tail -n 1)
  curl -s -N --max-time 3 ${last:+-H "Last-Event-ID: $last"} "$url/v1/sessions/a/events" >>"$tmp/ev"
  grep -q '^event: turn_done' "$tmp/ev" && break
done
sed -n 's/^data: //p' "$tmp/ev" | jq 'select(.content) | .content | length' | grep -qx 9000000 \
  || fail "no tool_result of 9 MB: $(grep '^event' "$tmp/ev" | tail -n 3)"
grep -q '^event: turn_done' "$tmp/ev" || fail "no turn_done after the big frame (3 reconnects)"
kill -TERM "$pid"; wait "$pid" || fail "exit status"
pid=
echo ok
