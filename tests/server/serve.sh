#!/usr/bin/env bash
# agentc serve end to end with curl: the session API, the SSE stream (ids, replay with
# Last-Event-ID mid-turn, pings), each if_busy policy, cancel mid-stream, pause/resume,
# outside events, tokens and ownership, limits, malformed input, slow clients, the
# OpenAI-compatible front, secrets, graceful stop. Every server listens on 127.0.0.1.
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  pkill -f "sleep 30.0$$" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL (serve.sh:${BASH_LINENO[0]}): $*" >&2; [ -f "$tmp/err" ] && tail -5 "$tmp/err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s

tokA=tok-alice-0123456789abcdef
tokB=tok-bob-0123456789abcdef
printf '# tokens\n%s alice\n%s bob\n' "$tokA" "$tokB" >"$tmp/tokens"
long=$(printf 'word%d ' $(seq 1 120))
marker="30.0$$"
cat >"$tmp/tools.json" <<JSON
{"tools": [{"name": "sleeper", "description": "Sleeps", "parameters": {"type": "object"},
            "command": ["sleep", "$marker"]}]}
JSON
# every session walks these turns from the first
jq -cn --arg long "$long" '{content: $long}' >"$tmp/script"
echo '{"tool_calls": [{"id": "c1", "name": "sleeper", "arguments": "{}"}]}' >>"$tmp/script"
echo '{"content": "third turn"}' >>"$tmp/script"
echo '{"content": "fourth turn"}' >>"$tmp/script"

# start NAME ARGS...: starts a server, sets $port and $pid
start() {
  local name=$1; shift
  rm -f "$tmp/$name.port"
  "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/$name.port" "$@" 2>"$tmp/$name.err" &
  pid=$!
  pids+=("$pid")
  wait_for test -s "$tmp/$name.port" || fail "server $name did not start: $(cat "$tmp/$name.err")"
  port=$(cat "$tmp/$name.port")
}
start main --provider script --script "$tmp/script" --script-delay-ms 40 --tools "$tmp/tools.json" \
  --tokens "$tmp/tokens" --ping-ms 300 --client-timeout 2 --max-body 4096
main_pid=$pid
url="http://127.0.0.1:$port"
A=(-H "Authorization: Bearer $tokA" -H "Content-Type: application/json")
B=(-H "Authorization: Bearer $tokB" -H "Content-Type: application/json")
# req METHOD PATH [BODY] [curl args...]: prints "STATUS BODY" with token A
req() {
  local m=$1 p=$2 body=${3-}
  shift 3 2>/dev/null || shift $#
  if [ -n "$body" ]; then
    curl -s --max-time 10 -o "$tmp/body" -w '%{http_code}' -X "$m" "${A[@]}" "$@" \
      -H 'Content-Type: application/json' --data-binary "$body" "$url$p"
  else
    curl -s --max-time 10 -o "$tmp/body" -w '%{http_code}' -X "$m" "${A[@]}" "$@" "$url$p"
  fi
}
expect() { # expect STATUS CODE(or -) METHOD PATH [BODY]
  local want=$1 code=$2; shift 2
  local got; got=$(req "$@")
  [ "$got" = "$want" ] || fail "$* -> $got, expected $want: $(head -c 300 "$tmp/body")"
  if [ "$code" != - ]; then
    jq -e --arg c "$code" '.error.code == $c and (.error.message | length > 0)' "$tmp/body" >/dev/null \
      || fail "$* -> error body $(head -c 300 "$tmp/body"), expected code $code"
  fi
}
# sse NAME ID [curl args]: reads a session's events in the background into $tmp/NAME
sse() {
  local name=$1 id=$2; shift 2
  curl -s -N --max-time 30 "${A[@]}" "$@" "$url/v1/sessions/$id/events" >"$tmp/$name" &
  pids+=("$!")
  eval "${name}_pid=$!"
}
# events FILE: the events of an SSE capture as JSON lines {id, event, data}
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

# ---- auth ---------------------------------------------------------------------------------
code=$(curl -s --max-time 5 -o "$tmp/body" -w '%{http_code}' "$url/v1/sessions")
[ "$code" = 401 ] || fail "no token: $code"
jq -e '.error.code == "unauthorized"' "$tmp/body" >/dev/null || fail "401 body: $(cat "$tmp/body")"
code=$(curl -s --max-time 5 -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer ${tokA}x" "$url/v1/sessions")
[ "$code" = 401 ] || fail "bad token: $code"
code=$(curl -s --max-time 5 -o "$tmp/body" -w '%{http_code}' -H "Authorization: Basic $tokA" "$url/v1/sessions")
[ "$code" = 401 ] || fail "basic auth: $code"
code=$(curl -s --max-time 5 -o "$tmp/page" -w '%{http_code}' "$url/")
[ "$code" = 200 ] && grep -q "<html" "$tmp/page" || fail "the page needs no token: $code"

# ---- sessions -----------------------------------------------------------------------------
expect 201 - POST /v1/sessions '{"id": "s1"}'
jq -e '.id == "s1" and .status == "idle"' "$tmp/body" >/dev/null || fail "created: $(cat "$tmp/body")"
expect 409 session_exists POST /v1/sessions '{"id": "s1"}'
expect 400 invalid_id POST /v1/sessions '{"id": "a/b"}'
expect 400 unknown_field POST /v1/sessions '{"id": "s2", "colour": "red"}'
expect 400 invalid_type POST /v1/sessions '{"id": 7}'
expect 400 invalid_json POST /v1/sessions '{"id": '
expect 400 invalid_request POST /v1/sessions '[1]'
expect 201 - POST /v1/sessions ''
auto=$(jq -r .id "$tmp/body")
expect 200 - GET /v1/sessions
jq -e '[.data[].id] == ["s1", "'"$auto"'"]' "$tmp/body" >/dev/null || fail "list: $(cat "$tmp/body")"
expect 200 - GET "/v1/sessions?limit=1"
jq -e '(.data | length) == 1 and .has_more and .next_after == "s1"' "$tmp/body" >/dev/null || fail "page 1: $(cat "$tmp/body")"
expect 200 - GET "/v1/sessions?limit=1&after=s1"
jq -e '.data[0].id == "'"$auto"'" and (.has_more | not)' "$tmp/body" >/dev/null || fail "page 2: $(cat "$tmp/body")"
expect 400 invalid_limit GET "/v1/sessions?limit=0"
# a page after a session that is not (deleted meanwhile): an error, not an empty last page
expect 400 invalid_after GET "/v1/sessions?limit=1&after=no-such"
# another token sees none of them
code=$(curl -s --max-time 5 -o "$tmp/body" -w '%{http_code}' "${B[@]}" "$url/v1/sessions/s1")
[ "$code" = 404 ] || fail "bob reads alice's session: $code"
code=$(curl -s --max-time 5 -o "$tmp/body" -w '%{http_code}' "${B[@]}" -X POST -d '{"content":"x"}' "$url/v1/sessions/s1/messages")
[ "$code" = 404 ] || fail "bob posts to alice's session: $code"
curl -s --max-time 5 "${B[@]}" "$url/v1/sessions" | jq -e '.data == []' >/dev/null || fail "bob's list is not empty"
# each token has its ids: bob makes an s1 of his own (alice's s1 is not told of), then drops it
code=$(curl -s --max-time 5 -o "$tmp/body" -w '%{http_code}' "${B[@]}" -X POST -d '{"id": "s1"}' "$url/v1/sessions")
[ "$code" = 201 ] || fail "bob cannot make an s1 of his own: $code $(cat "$tmp/body")"
code=$(curl -s --max-time 5 -o "$tmp/body" -w '%{http_code}' "${B[@]}" -X DELETE "$url/v1/sessions/s1")
[ "$code" = 200 ] || fail "bob cannot delete his s1: $code"
expect 200 - GET /v1/sessions/s1
expect 404 not_found GET /v1/sessions/nope
expect 200 - DELETE "/v1/sessions/$auto"
expect 404 not_found GET "/v1/sessions/$auto"

# ---- a turn streamed over SSE, then replayed from any point --------------------------------
sse ev1 s1
sleep 0.3
expect 202 - POST /v1/sessions/s1/messages '{"content": "tell me"}'
jq -e '.accepted == "started"' "$tmp/body" >/dev/null || fail "accepted: $(cat "$tmp/body")"
wait_for grep -q '^event: text' "$tmp/ev1" || fail "no text streamed"
# reconnect mid-turn: a first client drops after some events, a second resumes from its last id
kill "$ev1_pid"
sleep 0.2
last=$(events "$tmp/ev1" | tail -n1 | jq -r .id)
[ "${last%%.*}" -ge 3 ] || fail "too few events before the drop: $last"
sse ev2 s1 -H "Last-Event-ID: $last"
wait_for grep -q '^event: turn_done' "$tmp/ev2" || fail "no turn_done after the reconnect: $(tail -c 300 "$tmp/ev2")"
# the whole log, read again from the start
sse full s1 --max-time 2
wait "$full_pid" 2>/dev/null
ids=$( (events "$tmp/ev1"; events "$tmp/ev2") | jq -s "[.[].id | $key]")
echo "$ids" | jq -e '. == (. | unique)' >/dev/null || fail "drop + reconnect: ids not increasing: $ids"
# what the first client read and what the second read after it are the journal's frames
cmp <( (events "$tmp/ev1"; events "$tmp/ev2") | norm) <(events "$tmp/full" | norm) || fail "replayed events differ from the log"
events "$tmp/full" | jq -s -e --arg long "$long" '([.[] | select(.event == "text") | .data.delta] | add) == $long' >/dev/null \
  || fail "the streamed text is not the answer"
has_event "$tmp/full" '.event == "state_changed" and .data.machine == "process" and .data.to_state == "STREAMING" and .data.from_state == "CALLING" and .data.event == "llm.started"' \
  || fail "no state_changed CALLING -> STREAMING"
has_event "$tmp/full" '.event == "turn_done" and .data.answer == "'"$long"'"' || fail "turn_done answer"
grep -q '^: ping' "$tmp/ev2" || fail "no ': ping' comment on a stream open > 300 ms"
# ?starting_after=ID gives exactly the frames after ID
cur=$(events "$tmp/full" | tail -n3 | head -n1 | jq -r .id)
want=$(events "$tmp/full" | tail -n2 | jq -s -c '[.[].id]')
curl -s -N --max-time 2 "${A[@]}" "$url/v1/sessions/s1/events?starting_after=$cur" >"$tmp/tail"
[ "$(events "$tmp/tail" | jq -s -c '[.[].id]')" = "$want" ] || fail "starting_after $cur: $(events "$tmp/tail")"
n=$(events "$tmp/full" | tail -n1 | jq -r .id); n=${n%%.*}
expect 409 cursor_ahead GET "/v1/sessions/s1/events?starting_after=$((n + 5))"
expect 400 invalid_cursor GET "/v1/sessions/s1/events?starting_after=x"
# a cursor is digits: no sign, no space, no wrap to a huge number (strtoull takes " -3")
for bad in %20-3 -3 +3 %203 3.-1 3.%201 3.+1 3. .3 3.x 99999999999999999999; do
  expect 400 invalid_cursor GET "/v1/sessions/s1/events?starting_after=$bad"
done
expect 200 - GET /v1/sessions/s1
jq -e '.states.session == "Idle" and (.messages | map(.role)) == ["user", "assistant"] and .last_event_id == '"$n" "$tmp/body" >/dev/null \
  || fail "session after the turn: $(head -c 400 "$tmp/body")"

# ---- if_busy -------------------------------------------------------------------------------
expect 201 - POST /v1/sessions '{"id": "busy"}'
sse evb busy
expect 202 - POST /v1/sessions/busy/messages '{"content": "one"}'
wait_for grep -q '^event: text' "$tmp/evb" || fail "busy: no text"
# interrupt during streaming: the partial answer is reported, the next message runs (turn 2:
# the sleeper tool call)
expect 202 - POST /v1/sessions/busy/messages '{"content": "two", "if_busy": "interrupt"}'
jq -e '.accepted == "interrupted"' "$tmp/body" >/dev/null || fail "interrupt accepted: $(cat "$tmp/body")"
wait_for has_event "$tmp/evb" '.event == "stopped" and .data.reason == "interrupted" and (.data.partial_response | startswith("word1"))' \
  || fail "no stopped/interrupted with the partial response"
wait_for pgrep -f "sleep $marker" >/dev/null || fail "the sleeper tool did not start after the interrupt"
wait_for has_event "$tmp/evb" '.event == "tool_call" and .data.name == "sleeper"' || fail "no tool_call event"
# while the tool runs the session is busy: reject (the default) refuses
expect 409 session_busy POST /v1/sessions/busy/messages '{"content": "two"}'
expect 409 session_busy POST /v1/sessions/busy/messages '{"content": "two", "if_busy": "reject"}'
expect 400 invalid_value POST /v1/sessions/busy/messages '{"content": "two", "if_busy": "later"}'
expect 400 invalid_type POST /v1/sessions/busy/messages '{"content": ""}'
expect 400 invalid_type POST /v1/sessions/busy/messages '{"content": ["x"]}'
# rollback during the tool call: the turn stops and every message it added goes, its tool
# call with the assistant message that made it (the turn began with "one": the interrupt
# above continued it with "two"), so nothing is left unanswered
expect 202 - POST /v1/sessions/busy/messages '{"content": "three", "if_busy": "rollback"}'
jq -e '.accepted == "rolled_back"' "$tmp/body" >/dev/null || fail "rollback accepted: $(cat "$tmp/body")"
wait_for has_event "$tmp/evb" '.event == "turn_done" and .data.answer == "third turn"' || fail "no turn after the rollback"
has_event "$tmp/evb" '.event == "stopped" and .data.reason == "rolled_back"' || fail "no stopped/rolled_back"
has_event "$tmp/evb" '.event == "state_changed" and .data.machine == "session" and .data.from_state == "Running" and .data.to_state == "Idle" and .data.event == "rollback"' \
  || fail "no state_changed Running -> Idle on rollback"
no_sleeper() { ! pgrep -f "sleep $marker" >/dev/null; }
wait_for no_sleeper || fail "the tool process outlived the rollback"
expect 200 - GET /v1/sessions/busy
jq -e '[.messages[] | [.role, .content]] == [["user", "three"], ["assistant", "third turn"]]' "$tmp/body" >/dev/null \
  || fail "the rolled-back turn's messages are still there: $(jq -c '.messages' "$tmp/body")"
# rollback as an event, mid-stream: the turn stops and goes, nothing else is sent
expect 201 - POST /v1/sessions '{"id": "undo"}'
sse evu undo
expect 202 - POST /v1/sessions/undo/messages '{"content": "never mind"}'
wait_for grep -q '^event: text' "$tmp/evu" || fail "undo: no text"
expect 202 - POST /v1/sessions/undo/events/rollback ''
wait_for has_event "$tmp/evu" '.event == "stopped" and .data.reason == "rolled_back" and (.data.partial_response | startswith("word1"))' \
  || fail "no stopped/rolled_back for the rollback event"
expect 200 - GET /v1/sessions/undo
jq -e '.states.session == "Idle" and .messages == []' "$tmp/body" >/dev/null || fail "after the rollback event: $(head -c 400 "$tmp/body")"
# enqueue: a second message waits for the first turn
expect 201 - POST /v1/sessions '{"id": "queue"}'
sse evq queue
expect 202 - POST /v1/sessions/queue/messages '{"content": "first"}'
wait_for grep -q '^event: text' "$tmp/evq" || fail "queue: no text"
expect 202 - POST /v1/sessions/queue/messages '{"content": "second", "if_busy": "enqueue"}'
jq -e '.accepted == "enqueued"' "$tmp/body" >/dev/null || fail "enqueue accepted: $(cat "$tmp/body")"
wait_for has_event "$tmp/evq" '.event == "tool_call"' || fail "the queued message did not run"
expect 202 - POST /v1/sessions/queue/cancel ''
wait_for has_event "$tmp/evq" '.event == "stopped" and .data.reason == "cancelled"' || fail "cancel during a tool call"
has_event "$tmp/evq" '.event == "turn_done" and .data.answer == "'"$long"'"' || fail "the first turn did not finish before the queued one"
expect 409 session_ended POST /v1/sessions/queue/messages '{"content": "more"}'

# ---- cancel mid-stream: stopped with the partial response ----------------------------------
expect 201 - POST /v1/sessions '{"id": "cancel"}'
sse evc cancel
expect 202 - POST /v1/sessions/cancel/messages '{"content": "go"}'
wait_for grep -q '^event: text' "$tmp/evc" || fail "cancel: no text"
sleep 0.1
expect 202 - POST /v1/sessions/cancel/cancel ''
wait_for has_event "$tmp/evc" '.event == "stopped"' || fail "cancel: no stopped"
partial=$(events "$tmp/evc" | jq -s -r '[.[] | select(.event == "text") | .data.delta] | add')
has_event "$tmp/evc" '.event == "stopped" and .data.reason == "cancelled" and .data.partial_response == "'"$partial"'" and (.data.partial_response | length > 0)' \
  || fail "stopped event: $(grep -A1 stopped "$tmp/evc") streamed: $partial"
expect 200 - GET /v1/sessions/cancel
jq -e '.status == "ended" and .ended.how == "cancelled" and .last_turn.outcome == "cancelled" and .states.session == "Cancelled"' \
  "$tmp/body" >/dev/null || fail "cancelled status: $(head -c 300 "$tmp/body")"

# ---- pause / resume, outside events --------------------------------------------------------
expect 201 - POST /v1/sessions '{"id": "p"}'
expect 202 - POST /v1/sessions/p/pause ''
expect 200 - GET /v1/sessions/p
jq -e '.states.session == "Paused"' "$tmp/body" >/dev/null || fail "not paused: $(cat "$tmp/body")"
expect 202 - POST /v1/sessions/p/messages '{"content": "while paused"}'
jq -e '.accepted == "waiting_for_resume"' "$tmp/body" >/dev/null || fail "paused message: $(cat "$tmp/body")"
sse evp p
expect 202 - POST /v1/sessions/p/resume ''
wait_for has_event "$tmp/evp" '.event == "turn_done"' || fail "no turn after resume"
expect 202 - POST /v1/sessions/p/events/ping ''
expect 404 unknown_event POST /v1/sessions/p/events/approve ''
expect 403 event_not_allowed POST /v1/sessions/p/events/llm.completed ''
expect 403 event_not_allowed POST /v1/sessions/p/events/user_message ''
expect 400 invalid_json POST /v1/sessions/p/events/ping '{'

# ---- limits and hostile input: clear errors, the server stays up ---------------------------
big=$(head -c 5000 /dev/zero | tr '\0' a)
expect 413 body_too_large POST /v1/sessions "{\"id\": \"$big\"}"
head -c 6000 /dev/zero | tr '\0' a >"$tmp/bigfile"
code=$(curl -s --max-time 5 -o "$tmp/body" -w '%{http_code}' "${A[@]}" -H 'Transfer-Encoding: chunked' --data-binary @"$tmp/bigfile" "$url/v1/sessions")
[ "$code" = 413 ] || fail "chunked huge body: $code"
code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "${A[@]}" -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' b)" "$url/v1/sessions")
[ "$code" -ge 400 ] && [ "$code" -lt 500 ] || fail "huge header: $code"
expect 405 method_not_allowed PUT /v1/sessions
expect 404 not_found GET /v1/nothing
# slowloris: a client that never finishes its headers is dropped after --client-timeout
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /v1/sessions HTTP/1.1\r\nHost: x\r\n' >&3
t0=$(date +%s)
timeout 10 cat <&3 >/dev/null
t1=$(date +%s)
exec 3>&-
[ $((t1 - t0)) -lt 9 ] || fail "a slow client was not dropped"
expect 200 - GET /v1/sessions
kill -0 "$main_pid" || fail "the server died"

# ---- OpenAI-compatible front ---------------------------------------------------------------
expect 200 - GET /v1/models
jq -e '.object == "list" and .data[0].id == "default"' "$tmp/body" >/dev/null || fail "models: $(cat "$tmp/body")"
expect 200 - POST /v1/chat/completions '{"model": "agentc", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}'
jq -e --arg long "$long" '.object == "chat.completion" and .choices[0].message.content == $long and .choices[0].finish_reason == "stop"' "$tmp/body" >/dev/null \
  || fail "chat completion: $(head -c 300 "$tmp/body")"
curl -s -N --max-time 10 "${A[@]}" -d '{"model": "agentc", "stream": true, "messages": [{"role": "user", "content": "hi"}]}' \
  "$url/v1/chat/completions" >"$tmp/chat"
tail -n2 "$tmp/chat" | grep -q '^data: \[DONE\]' || fail "stream does not end with [DONE]: $(tail -c 200 "$tmp/chat")"
grep '^data: {' "$tmp/chat" | sed 's/^data: //' | jq -s -e --arg long "$long" '([.[].choices[0].delta.content // ""] | add) == $long' >/dev/null \
  || fail "streamed chat content"
expect 400 invalid_type POST /v1/chat/completions '{"messages": []}'
expect 400 invalid_request POST /v1/chat/completions '{"messages": [{"role": "assistant", "content": "x"}]}'
expect 200 - GET /v1/sessions
jq -e '[.data[].id | select(startswith("chatcmpl"))] == []' "$tmp/body" >/dev/null || fail "chat sessions are listed"

# ---- graceful stop -------------------------------------------------------------------------
expect 201 - POST /v1/sessions '{"id": "last"}'
sse evl last
expect 202 - POST /v1/sessions/last/messages '{"content": "long one"}'
wait_for grep -q '^event: text' "$tmp/evl" || fail "last: no text"
kill -TERM "$main_pid"
wait "$main_pid"; rc=$?
[ $rc -eq 0 ] || fail "SIGTERM exit status $rc"
wait_for has_event "$tmp/evl" '.event == "turn_done"' || fail "the running turn did not finish in the grace period"
grep -q "stopped" "$tmp/main.err" || fail "no stop message"

# ---- refusals at start, limits per token ---------------------------------------------------
"$agentc" serve --provider script --script "$tmp/script" --listen 0.0.0.0:0 2>"$tmp/err"; rc=$?
[ $rc -ne 0 ] && grep -q "without --tokens" "$tmp/err" || fail "non-loopback without tokens: rc $rc $(cat "$tmp/err")"
"$agentc" serve --provider script --script "$tmp/script" --listen nowhere 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail "bad --listen: $rc"
start lim --provider script --script "$tmp/script" --tokens "$tmp/tokens" --sessions-per-token 2 --messages-per-minute 2
url="http://127.0.0.1:$port"
expect 201 - POST /v1/sessions '{"id": "l1"}'
expect 201 - POST /v1/sessions '{"id": "l2"}'
expect 429 too_many_sessions POST /v1/sessions '{"id": "l3"}'
code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "${B[@]}" -X POST -d '{}' "$url/v1/sessions")
[ "$code" = 201 ] || fail "bob is limited by alice's sessions: $code"
expect 202 - POST /v1/sessions/l1/messages '{"content": "a", "if_busy": "enqueue"}'
expect 202 - POST /v1/sessions/l1/messages '{"content": "b", "if_busy": "enqueue"}'
expect 429 rate_limited POST /v1/sessions/l1/messages '{"content": "c", "if_busy": "enqueue"}'
kill -TERM "$pid"; wait "$pid" || fail "lim server exit"

# ---- the provider's API key never reaches a response, an event or the log ------------------
secret="sk-secret-$$-do-not-show"
OPENAI_API_KEY=$secret start key --base-url "http://127.0.0.1:9/v1" --model m --param max_retries=0 --param connect_timeout=1s
url="http://127.0.0.1:$port"
A=()
expect 201 - POST /v1/sessions '{"id": "k"}'
sse evk k
expect 202 - POST /v1/sessions/k/messages '{"content": "hi"}'
wait_for has_event "$tmp/evk" '.event == "stopped"' || fail "no stop after a failed call"
has_event "$tmp/evk" '.event == "error" and .data.code == "turn_failed"' || fail "no error event"
expect 200 - GET /v1/sessions/k
cp "$tmp/body" "$tmp/k.json"
expect 502 agent_failed POST /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}]}'
kill -TERM "$pid"; wait "$pid" || fail "key server exit status"
! grep -r --exclude=tokens -- "$secret" "$tmp" >/dev/null || fail "the API key leaked: $(grep -rl -- "$secret" "$tmp")"
echo "serve: all checks passed"
