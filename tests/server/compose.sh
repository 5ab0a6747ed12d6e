#!/usr/bin/env bash
# agentc serve with a tool file's sub-agents (docs/composition.md): two calls of agent::math
# in one turn run as child sessions at once; the session's stream carries agent_started and
# agent_done frames from its own journal around each call's tool_result, and the answer joins
# the children's. A rollback in the middle of a child stops the child's turn and its tool
# process, removes the turn, and the session answers the next message.
set -uo pipefail
agentc=$1 httpd=$2
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -s "$tmp/sleeper.pid" ] && kill "$(cat "$tmp/sleeper.pid")" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL (compose.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 5 "$tmp"/*.err >&2; exit 1; }
wait_for() { for _ in $(seq 1 200); do "$@" && return 0; sleep 0.05; done; return 1; }
req() {
  curl -s --max-time 10 -o "$tmp/body" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data-binary "$3"} "$url$2"
}
expect() {
  local want=$1; shift
  local got; got=$(req "$@")
  [ "$got" = "$want" ] || fail "$* -> $got, expected $want: $(head -c 300 "$tmp/body")"
}
sse() { curl -s -N --max-time 30 "$url/v1/sessions/$2/events" >"$tmp/$1" & pids+=("$!"); }
frames() { awk '/^event: /{ev=substr($0,8)} /^data: /{print "{\"event\":\"" ev "\",\"data\":" substr($0,7) "}"}' "$1"; }
has_event() { frames "$1" | jq -s -e "any(.[]; $2)" >/dev/null 2>&1; }

"$httpd" --port-file "$tmp/model.port" --mode calc --log "$tmp/requests" 2>"$tmp/model.err" &
pids+=("$!")
wait_for test -s "$tmp/model.port" || fail "the model server did not start"
cat >"$tmp/tools.json" <<JSON
{"tools": [{"name": "sleeper", "description": "Sleeps", "parameters": {"type": "object"},
            "command": ["sh", "-c", "echo \$\$ >'$tmp/sleeper.pid'; sleep 30; echo slept"]}],
 "agents": [{"name": "math", "description": "Does arithmetic"}]}
JSON
AGENTC_TEST_KEY=sk-test "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/a.port" \
  --base-url "http://127.0.0.1:$(cat "$tmp/model.port")/v1" --model m --api-key-env AGENTC_TEST_KEY \
  --tools builtin:calculator --tools "$tmp/tools.json" 2>"$tmp/a.err" &
pids+=("$!")
wait_for test -s "$tmp/a.port" || fail "server did not start"
url="http://127.0.0.1:$(cat "$tmp/a.port")"

# ---- two children at once: frames from the parent's journal, the joined answer ---------------
expect 201 POST /v1/sessions '{"id": "p1"}'
sse ev1 p1
expect 202 POST /v1/sessions/p1/messages '{"content": "DELEGATE[math:What is 6 * 7?|math:What is 2 + 3?]"}'
wait_for has_event "$tmp/ev1" '.event == "turn_done"' || fail "no turn_done: $(cat "$tmp/ev1")"
[ "$(frames "$tmp/ev1" | jq -s -r '[.[] | select(.event | startswith("agent_")) | .event] | join(" ")')" \
  = "agent_started agent_started agent_done agent_done" ] || fail "agent frames: $(cat "$tmp/ev1")"
has_event "$tmp/ev1" '.event == "agent_started" and .data.agent == "math" and (.data.session | test("p1[.]math[.]dlg_"))' \
  || fail "agent_started's child session"
has_event "$tmp/ev1" '.event == "agent_done" and .data.ok == true and .data.outcome == "completed"' \
  || fail "agent_done"
has_event "$tmp/ev1" '.event == "tool_result" and .data.content == "The answer is 42."' || fail "a child's answer"
expect 200 GET /v1/sessions/p1
jq -e '.answer == "The answer is The answer is 42.; The answer is 5.."' "$tmp/body" >/dev/null \
  || fail "answer: $(head -c 400 "$tmp/body")"

# ---- a rollback mid-child: the child's turn and its tool stop, the turn is removed ------------
expect 201 POST /v1/sessions '{"id": "p2"}'
sse ev2 p2
expect 202 POST /v1/sessions/p2/messages '{"content": "DELEGATE[math:TOOLSLEEP]"}'
wait_for test -s "$tmp/sleeper.pid" || fail "the child's tool did not start"
expect 202 POST /v1/sessions/p2/events/rollback
wait_for has_event "$tmp/ev2" '.event == "stopped"' || fail "no stopped: $(cat "$tmp/ev2")"
sleep 0.2
! kill -0 "$(cat "$tmp/sleeper.pid")" 2>/dev/null || fail "the child's tool process outlived the rollback"
expect 200 GET /v1/sessions/p2
jq -e '.status == "idle" and .last_turn.outcome == "rolled_back"' "$tmp/body" >/dev/null \
  || fail "after rollback: $(head -c 400 "$tmp/body")"
expect 202 POST /v1/sessions/p2/messages '{"content": "What is 1 + 1?"}'
wait_for has_event "$tmp/ev2" '.event == "turn_done"' || fail "no answer after the rollback"
jq -c 'select(.body.messages[-1].content == "What is 1 + 1?") | [.body.messages[].role]' "$tmp/requests" \
  | head -n1 | grep -qx '\["user"\]' || fail "the rolled back turn was not removed: $(tail -n1 "$tmp/requests" | head -c 600)"
echo "serve compose: ok"
