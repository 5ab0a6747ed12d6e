#!/usr/bin/env bash
# agentc serve on a spec that renames the session machine and its states
# (examples/specs/renamed_states.fsm: `conversation`, `Working`, `OnHold`): every if_busy
# policy, pause/resume and the rollback event behave as on the shipped spec, since the
# server asks the engine (status, accepted events), never a state's name.
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
marker="31.0$$"
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; pkill -f "sleep $marker" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (renamed.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 5 "$tmp/err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
long=$(printf 'word%d ' $(seq 1 120))
cat >"$tmp/tools.json" <<JSON
{"tools": [{"name": "sleeper", "description": "Sleeps", "parameters": {"type": "object"},
            "command": ["sleep", "$marker"]}]}
JSON
jq -cn --arg long "$long" '{content: $long}' >"$tmp/script"
echo '{"tool_calls": [{"id": "c1", "name": "sleeper", "arguments": "{}"}]}' >>"$tmp/script"
echo '{"content": "third turn"}' >>"$tmp/script"
"$agentc" serve --spec examples/specs/renamed_states.fsm --provider script --script "$tmp/script" \
  --script-delay-ms 40 --tools "$tmp/tools.json" --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pids+=("$!")
wait_for test -s "$tmp/port" || fail "server did not start"
url="http://127.0.0.1:$(cat "$tmp/port")"
req() { # req METHOD PATH [BODY]: prints the status, the body in $tmp/body
  curl -s --max-time 10 -o "$tmp/body" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data-binary "$3"} "$url$2"
}
expect() { # expect STATUS METHOD PATH [BODY]
  local want=$1; shift
  local got; got=$(req "$@")
  [ "$got" = "$want" ] || fail "$* -> $got, expected $want: $(head -c 300 "$tmp/body")"
}
accepted() { jq -e --arg a "$1" '.accepted == $a' "$tmp/body" >/dev/null || fail "accepted: $(cat "$tmp/body"), expected $1"; }
sse() { curl -s -N --max-time 30 "$url/v1/sessions/$2/events" >"$tmp/$1" & pids+=("$!"); }
events() {
  awk 'BEGIN{id="";ev=""} /^id: /{id=substr($0,5)} /^event: /{ev=substr($0,8)}
       /^data: /{d=substr($0,7); printf "{\"id\":%s,\"event\":\"%s\",\"data\":%s}\n", id, ev, d}' "$1"
}
has_event() { events "$1" | jq -s -e "any(.[]; $2)" >/dev/null 2>&1; }
state() { curl -s --max-time 5 "$url/v1/sessions/$1" | jq -r .states.conversation; }

# reject (the default) while a turn streams; interrupt; reject while its tool runs; rollback
expect 201 POST /v1/sessions '{"id": "b"}'
sse evb b
expect 202 POST /v1/sessions/b/messages '{"content": "one"}'
accepted started
wait_for grep -q '^event: text' "$tmp/evb" || fail "no text"
[ "$(state b)" = Working ] || fail "state while streaming: $(state b)"
expect 409 POST /v1/sessions/b/messages '{"content": "two"}'
jq -e '.error.code == "session_busy"' "$tmp/body" >/dev/null || fail "reject: $(cat "$tmp/body")"
expect 202 POST /v1/sessions/b/messages '{"content": "two", "if_busy": "interrupt"}'
accepted interrupted
wait_for has_event "$tmp/evb" '.event == "stopped" and .data.reason == "interrupted" and (.data.partial_response | startswith("word1"))' \
  || fail "no stopped/interrupted"
wait_for has_event "$tmp/evb" '.event == "tool_call" and .data.name == "sleeper"' || fail "the next turn did not run"
expect 409 POST /v1/sessions/b/messages '{"content": "x", "if_busy": "reject"}'
expect 202 POST /v1/sessions/b/messages '{"content": "three", "if_busy": "rollback"}'
accepted rolled_back
wait_for has_event "$tmp/evb" '.event == "turn_done" and .data.answer == "third turn"' || fail "no turn after the rollback"
has_event "$tmp/evb" '.event == "state_changed" and .data.machine == "conversation" and .data.from_state == "Working" and .data.to_state == "Idle" and .data.event == "rollback"' \
  || fail "no state_changed Working -> Idle on rollback"
expect 200 GET /v1/sessions/b
jq -e '[.messages[] | [.role, .content]] == [["user", "three"], ["assistant", "third turn"]]' "$tmp/body" >/dev/null \
  || fail "after the rollback: $(jq -c .messages "$tmp/body")"
# enqueue waits for the running turn
expect 201 POST /v1/sessions '{"id": "q"}'
sse evq q
expect 202 POST /v1/sessions/q/messages '{"content": "first"}'
wait_for grep -q '^event: text' "$tmp/evq" || fail "q: no text"
expect 202 POST /v1/sessions/q/messages '{"content": "second", "if_busy": "enqueue"}'
accepted enqueued
wait_for has_event "$tmp/evq" '.event == "tool_call"' || fail "the queued message did not run"
expect 202 POST /v1/sessions/q/cancel ''
wait_for has_event "$tmp/evq" '.event == "stopped" and .data.reason == "cancelled"' || fail "cancel"
# pause / resume
expect 201 POST /v1/sessions '{"id": "p"}'
expect 202 POST /v1/sessions/p/pause ''
wait_for sh -c "[ \"\$(curl -s $url/v1/sessions/p | jq -r .states.conversation)\" = OnHold ]" || fail "not on hold: $(state p)"
expect 202 POST /v1/sessions/p/messages '{"content": "while paused"}'
accepted waiting_for_resume
sse evp p
expect 202 POST /v1/sessions/p/resume ''
wait_for has_event "$tmp/evp" '.event == "turn_done"' || fail "no turn after resume"
# the rollback event mid-stream
expect 201 POST /v1/sessions '{"id": "u"}'
sse evu u
expect 202 POST /v1/sessions/u/messages '{"content": "never mind"}'
wait_for grep -q '^event: text' "$tmp/evu" || fail "u: no text"
expect 202 POST /v1/sessions/u/events/rollback ''
wait_for has_event "$tmp/evu" '.event == "stopped" and .data.reason == "rolled_back"' || fail "no stopped/rolled_back"
wait_for sh -c "[ \"\$(curl -s $url/v1/sessions/u | jq -r .states.conversation)\" = Idle ]" || fail "u: $(state u)"
echo ok
