#!/usr/bin/env bash
# agentc serve: a turn that fails or is cancelled leaves the session usable, and a closed
# session refuses clearly. A turn the loopback model fails (400) reports turn_failed and
# last_turn failed, the session idle; the next message is answered and its request holds the
# first. POST /turn/cancel stops a streaming turn (stopped: cancelled), the session stays
# idle with last_turn cancelled and the next message is answered; POST /close ends it, a
# message or a turn/cancel then answers 409 session_ended saying how and when; DELETE still
# removes it.
set -uo pipefail
agentc=$1 httpd=$2
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (turns.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 5 "$tmp"/*.err >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
req() { # req METHOD PATH [BODY]: prints the status, the body in $tmp/body
  curl -s --max-time 10 -o "$tmp/body" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data-binary "$3"} "$url$2"
}
expect() { # expect STATUS METHOD PATH [BODY]
  local want=$1; shift
  local got; got=$(req "$@")
  [ "$got" = "$want" ] || fail "$* -> $got, expected $want: $(head -c 300 "$tmp/body")"
}
body() { jq -e "$1" "$tmp/body" >/dev/null || fail "${2:-body}: $(head -c 600 "$tmp/body")"; }
sse() { curl -s -N --max-time 30 "$url/v1/sessions/$2/events" >"$tmp/$1" & pids+=("$!"); }
has_event() { # has_event FILE JQ: a frame {event, data} of FILE matches
  awk '/^event: /{ev=substr($0,8)} /^data: /{print "{\"event\":\"" ev "\",\"data\":" substr($0,7) "}"}' "$1" |
    jq -s -e "any(.[]; $2)" >/dev/null 2>&1
}
# start NAME ARGS...: agentc serve ARGS on a free port; sets $url
start() {
  local name=$1; shift
  "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/$name.port" "$@" 2>"$tmp/$name.err" &
  pids+=("$!")
  wait_for test -s "$tmp/$name.port" || fail "server $name did not start"
  url="http://127.0.0.1:$(cat "$tmp/$name.port")"
}

# ---- a model error fails the turn, not the session ---------------------------------------
mkdir -p "$tmp/model"
echo '{"error": {"message": "the model refused (TEST400)", "type": "invalid_request_error"}}' \
  >"$tmp/model/01-400.json"
printf '%s\n\n' 'data: {"choices":[{"index":0,"delta":{"content":"recovered"}}]}' \
  'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}' 'data: [DONE]' >"$tmp/model/02.sse"
"$httpd" --port-file "$tmp/model.port" --script "$tmp/model" --log "$tmp/requests" &
pids+=("$!")
wait_for test -s "$tmp/model.port" || fail "the model server did not start"
AGENTC_TEST_KEY=sk-test start a --base-url "http://127.0.0.1:$(cat "$tmp/model.port")/v1" --model m \
  --api-key-env AGENTC_TEST_KEY
expect 201 POST /v1/sessions '{"id": "f1"}'
sse evf f1
expect 202 POST /v1/sessions/f1/messages '{"content": "first question"}'
wait_for has_event "$tmp/evf" '.event == "stopped" and .data.reason == "failed"' || fail "no stopped/failed"
has_event "$tmp/evf" '.event == "error" and .data.code == "turn_failed" and (.data.message | test("TEST400"))' \
  || fail "no turn_failed error: $(cat "$tmp/evf")"
expect 200 GET /v1/sessions/f1
body '.status == "idle" and .states.session == "Idle" and .last_turn.outcome == "failed"
      and (.last_turn.error | test("TEST400")) and (has("ended") | not)' "after the failed turn"
expect 202 POST /v1/sessions/f1/messages '{"content": "second question"}'
body '.accepted == "started"'
wait_for has_event "$tmp/evf" '.event == "turn_done" and .data.answer == "recovered"' || fail "no answer after the failure"
expect 200 GET /v1/sessions/f1
body '.status == "idle" and .last_turn == {"outcome": "completed"} and (has("error") | not)' "after the next turn"
tail -n1 "$tmp/requests" | jq -e '[.body.messages[] | select(.role == "user") | .content]
  == ["first question", "second question"]' >/dev/null || fail "the second request: $(tail -n1 "$tmp/requests")"

# ---- turn/cancel stops the turn, the session stays; close ends it --------------------------
long=$(printf 'word%d ' $(seq 1 150))
jq -cn --arg long "$long" '{content: $long}' >"$tmp/script"
echo '{"content": "after the cancel"}' >>"$tmp/script"
start b --provider script --script "$tmp/script" --script-delay-ms 40
expect 201 POST /v1/sessions '{"id": "t1"}'
expect 409 POST /v1/sessions/t1/turn/cancel
body '.error.code == "no_turn"'
sse evt t1
expect 202 POST /v1/sessions/t1/messages '{"content": "go"}'
wait_for grep -q 'word5 ' "$tmp/evt" || fail "no text streamed"
expect 202 POST /v1/sessions/t1/turn/cancel
body '.accepted == "turn.cancel"'
wait_for has_event "$tmp/evt" '.event == "stopped" and .data.reason == "cancelled"' || fail "no stopped/cancelled"
has_event "$tmp/evt" '.event == "discarded" and .data.reason == "cancelled"' || fail "the partial answer was not discarded"
expect 200 GET /v1/sessions/t1
body '.status == "idle" and .states.session == "Idle" and .states.agent == null
      and .last_turn.outcome == "cancelled" and (has("ended") | not)' "after turn/cancel"
sleep 0.3
grep -q 'word150' "$tmp/evt" && fail "the turn went on streaming"
expect 202 POST /v1/sessions/t1/messages '{"content": "next"}'
body '.accepted == "started"'
wait_for has_event "$tmp/evt" '.event == "turn_done" and .data.answer == "after the cancel"' || fail "no turn after the cancel"
expect 200 GET /v1/sessions/t1
body '.last_turn.outcome == "completed" and ([.messages[] | select(.role == "user") | .content] == ["go", "next"])' \
  "the history after turn/cancel"
expect 202 POST /v1/sessions/t1/close
wait_for has_event "$tmp/evt" '.event == "stopped" and .data.reason == "closed"' || fail "no stopped/closed"
expect 200 GET /v1/sessions/t1
body '.status == "ended" and .ended.how == "closed" and (.ended.at_ms > 0) and .states.session == "Closed"
      and .last_turn.outcome == "completed"' "after close"
expect 409 POST /v1/sessions/t1/messages '{"content": "are you there"}'
body '.error.code == "session_ended" and (.error.message | test("^session t1 ended \\(closed\\) at 20[0-9-]+T[0-9:]+Z; start a new one$"))'
expect 409 POST /v1/sessions/t1/turn/cancel
body '.error.code == "session_ended"'
expect 200 DELETE /v1/sessions/t1
expect 404 GET /v1/sessions/t1
echo "ok"
