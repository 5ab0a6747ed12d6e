#!/usr/bin/env bash
# agentc serve: streamed text the engine drops never stays in what an SSE client assembles.
# A model call that streams HALF-ANSWER, fails (503, retryable) and is retried; a turn
# interrupted and one rolled back mid-stream: each gives a `discarded` event whose text ends
# what was streamed, and text deltas minus discarded text equal the answers. The
# OpenAI-compatible front, streamed and not, gives the final answer alone (raw HTTP here; the
# `openai` client in openai.sh).
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (discard.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 5 "$tmp"/*.err >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
start() { # start NAME SCRIPT: a server, $url set
  rm -f "$tmp/port"
  "$agentc" serve --provider script --script "$2" --script-delay-ms 30 --param backoff_initial=300ms \
    --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/$1.err" &
  pids+=("$!")
  wait_for test -s "$tmp/port" || fail "server $1 did not start"
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
sse() { curl -s -N --max-time 30 "$url/v1/sessions/$2/events" >"$tmp/$1" & pids+=("$!"); }
events() {
  awk 'BEGIN{id="";ev=""} /^id: /{id=substr($0,5)} /^event: /{ev=substr($0,8)}
       /^data: /{d=substr($0,7); printf "{\"id\":%s,\"event\":\"%s\",\"data\":%s}\n", id, ev, d}' "$1"
}
has_event() { events "$1" | jq -s -e "any(.[]; $2)" >/dev/null 2>&1; }
# what a client assembles: text deltas, each discarded text taken off the end it must be
assembled() {
  events "$1" | jq -s -r 'reduce .[] as $e (""; if $e.event == "text" then . + $e.data.delta
    elif $e.event == "discarded" then (if endswith($e.data.text) then .[0:length - ($e.data.text | length)]
      else "NOT-A-SUFFIX: " + $e.data.text end) else . end)'
}

# ---- a retried call ---------------------------------------------------------------------------
echo '{"error": {"status": 503, "message": "unavailable", "retryable": true, "partial": "HALF-ANSWER "}}' >"$tmp/retry"
ans="FULL ANSWER, streamed in several pieces"
jq -cn --arg a "$ans" '{content: $a}' >>"$tmp/retry"
start retry "$tmp/retry"
j -X POST -d '{"id": "r"}' "$url/v1/sessions" >/dev/null
sse ev r
sleep 0.2
j -X POST -d '{"content": "hi"}' "$url/v1/sessions/r/messages" >/dev/null
wait_for has_event "$tmp/ev" '.event == "turn_done"' || fail "no turn_done: $(cat "$tmp/ev")"
has_event "$tmp/ev" '.event == "text" and .data.delta == "HALF-ANSWER "' || fail "the partial was not streamed"
has_event "$tmp/ev" '.event == "discarded" and .data.text == "HALF-ANSWER " and .data.partial_len == 12 and .data.reason == "call_failed"' \
  || fail "no discarded event: $(grep -A1 discarded "$tmp/ev")"
events "$tmp/ev" | jq -s -e '(map(.event) | index("discarded")) < (map(.event) | index("retry"))' >/dev/null \
  || fail "the discarded event does not come before the retry"
[ "$(assembled "$tmp/ev")" = "$ans" ] || fail "assembled: $(assembled "$tmp/ev")"
has_event "$tmp/ev" ".event == \"turn_done\" and .data.answer == \"$ans\"" || fail "answer"
# the OpenAI-compatible front, not streamed then streamed (raw bytes)
j -X POST -d '{"model": "agentc", "messages": [{"role": "user", "content": "hi"}]}' "$url/v1/chat/completions" >"$tmp/plain"
jq -e --arg a "$ans" '.choices[0].message.content == $a' "$tmp/plain" >/dev/null || fail "chat: $(cat "$tmp/plain")"
curl -s -N --max-time 20 -H 'Content-Type: application/json' \
  -d '{"model": "agentc", "stream": true, "messages": [{"role": "user", "content": "hi"}]}' "$url/v1/chat/completions" >"$tmp/chat"
tail -n 2 "$tmp/chat" | grep -q '^data: \[DONE\]' || fail "the stream did not end: $(tail -c 300 "$tmp/chat")"
text=$(grep '^data: {' "$tmp/chat" | sed 's/^data: //' | jq -s -r 'map(.choices[0].delta.content // "") | add')
[ "$text" = "$ans" ] || fail "the streamed chat assembles: $text"
[ "$(grep -c '"content":"[^"]' "$tmp/chat")" -ge 3 ] || fail "the answer came in one piece: $(cat "$tmp/chat")"

# ---- interrupt and rollback mid-stream ---------------------------------------------------------
long=$(printf 'word%d ' $(seq 1 120))
jq -cn --arg long "$long" '{content: $long}' >"$tmp/long"
echo '{"content": "second answer"}' >>"$tmp/long"
start stop "$tmp/long"
for how in interrupt rollback; do
  j -X POST -d "{\"id\": \"$how\"}" "$url/v1/sessions" >/dev/null
  sse "ev_$how" "$how"
  sleep 0.2
  j -X POST -d '{"content": "one"}' "$url/v1/sessions/$how/messages" >/dev/null
  wait_for has_event "$tmp/ev_$how" '.event == "text" and (.data.delta | startswith("word3"))' || fail "$how: no text"
  j -X POST -d "{\"content\": \"two\", \"if_busy\": \"$how\"}" "$url/v1/sessions/$how/messages" >/dev/null
  wait_for has_event "$tmp/ev_$how" '.event == "turn_done"' || fail "$how: no turn_done"
  reason=$([ $how = interrupt ] && echo interrupted || echo rolled_back)
  has_event "$tmp/ev_$how" ".event == \"discarded\" and .data.reason == \"$reason\" and (.data.text | startswith(\"word1 \"))" \
    || fail "$how: no discarded event"
  [ "$(assembled "$tmp/ev_$how")" = "second answer" ] || fail "$how: assembled: $(assembled "$tmp/ev_$how")"
done
echo ok
