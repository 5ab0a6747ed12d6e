#!/usr/bin/env bash
# agentc serve with a tool file's sub-agents (docs/composition.md): two calls of agent::math
# in one turn run as child sessions at once; the session's stream carries agent_started and
# agent_done frames from its own journal around each call's tool_result, and the answer joins
# the children's. A rollback in the middle of a child stops the child's turn and its tool
# process, removes the turn, records the call's agent.done, and the session answers the next
# message.
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
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
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

# ---- the children are stored sessions: listed under their parent, each its own stream ---------
jq -e '[.children[] | select((.session | test("^p1[.]math[.]dlg_")) and .agent == "math" and .ok == true and .outcome == "completed")] | length == 2' \
  "$tmp/body" >/dev/null || fail "the parent's children: $(jq -c .children "$tmp/body")"
child=$(jq -r '.children[0].session' "$tmp/body")
expect 200 GET "/v1/sessions/$child"
jq -e '.parent.session == "p1" and .parent.path == "math" and (.parent.call | test("^dlg_")) and (.answer | test("^The answer is (42|5)[.]$")) and .status == "idle"' \
  "$tmp/body" >/dev/null || fail "the child session: $(head -c 400 "$tmp/body")"
sse evc "$child"
wait_for has_event "$tmp/evc" '.event == "turn_done"' || fail "the child's own stream: $(cat "$tmp/evc")"
has_event "$tmp/evc" '.event == "tool_call" and .data.name == "calculator"' || fail "the child's tool call on its stream"
! has_event "$tmp/evc" '.event == "agent_started"' || fail "the parent's frames on the child's stream"
! has_event "$tmp/ev1" '.event == "tool_call" and .data.name == "calculator"' || fail "a child's frames on the parent's stream"

# ---- a rollback mid-child: the child's turn and its tool stop, the turn is removed ------------
expect 201 POST /v1/sessions '{"id": "p2"}'
sse ev2 p2
expect 202 POST /v1/sessions/p2/messages '{"content": "DELEGATE[math:TOOLSLEEP]"}'
wait_for test -s "$tmp/sleeper.pid" || fail "the child's tool did not start"
expect 202 POST /v1/sessions/p2/events/rollback
wait_for has_event "$tmp/ev2" '.event == "stopped"' || fail "no stopped: $(cat "$tmp/ev2")"
wait_for has_event "$tmp/ev2" '.event == "agent_done" and .data.ok == false and .data.outcome == "cancelled"' \
  || fail "the stopped call records no agent.done: $(cat "$tmp/ev2")"
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_for gone "$(cat "$tmp/sleeper.pid")" || fail "the child's tool process outlived the rollback"
expect 200 GET /v1/sessions/p2
jq -e '.status == "idle" and .last_turn.outcome == "rolled_back"' "$tmp/body" >/dev/null \
  || fail "after rollback: $(head -c 400 "$tmp/body")"
expect 202 POST /v1/sessions/p2/messages '{"content": "What is 1 + 1?"}'
wait_for has_event "$tmp/ev2" '.event == "turn_done"' || fail "no answer after the rollback"
jq -c 'select(.body.messages[-1].content == "What is 1 + 1?") | [.body.messages[].role]' "$tmp/requests" \
  | head -n1 | grep -qx '\["user"\]' || fail "the rolled back turn was not removed: $(tail -n1 "$tmp/requests" | head -c 600)"

# ---- a pause mid-child pauses the child; after the resume the call again resumes that child ---
rm -f "$tmp/sleeper.pid"
expect 201 POST /v1/sessions '{"id": "p3"}'
sse ev3 p3
expect 202 POST /v1/sessions/p3/messages '{"content": "DELEGATE[math:TOOLSLEEP]"}'
wait_for test -s "$tmp/sleeper.pid" || fail "the child's tool did not start (pause)"
expect 202 POST /v1/sessions/p3/events/pause
wait_for has_event "$tmp/ev3" '.event == "agent_done" and .data.ok == false and .data.outcome == "paused"' \
  || fail "the paused call's agent.done: $(grep -A1 agent_ "$tmp/ev3")"
pkid=$(curl -s "$url/v1/sessions/p3" | jq -r '.children[0].session')
child_paused() { curl -s "$url/v1/sessions/$pkid" | jq -e '.status == "paused"' >/dev/null; }
wait_for child_paused || fail "the child is not paused: $(curl -s "$url/v1/sessions/$pkid" | head -c 300)"
wait_for gone "$(cat "$tmp/sleeper.pid")" || fail "the paused child's tool process runs on"
expect 200 GET /v1/sessions/p3
jq -e '.status == "paused"' "$tmp/body" >/dev/null || fail "the parent is not paused: $(head -c 300 "$tmp/body")"
expect 202 POST /v1/sessions/p3/events/resume
wait_for has_event "$tmp/ev3" '.event == "turn_done"' || fail "no answer after the resume: $(grep -A1 'agent_\|error' "$tmp/ev3")"
[ "$(frames "$tmp/ev3" | jq -s -r '[.[] | select(.event | startswith("agent_")) | .event + ":" + .data.session + ":" + (.data.outcome // "")] | join(" ")')" \
  = "agent_started:$pkid: agent_done:$pkid:paused agent_started:$pkid: agent_done:$pkid:completed" ] \
  || fail "one child, paused then resumed: $(grep -A1 agent_ "$tmp/ev3")"
expect 200 GET /v1/sessions/p3
jq -e '.status == "idle" and (.answer | startswith("The answer is The answer is Error: interrupted: the session was paused")) and (.children | length) == 1
  and .children[0].outcome == "completed" and ([.tool_calls[] | select(.state == "none")] | length) == 0' "$tmp/body" >/dev/null \
  || fail "the parent after the resume: $(head -c 600 "$tmp/body")"
expect 200 GET "/v1/sessions/$pkid"
jq -e '.status == "idle" and ([.messages[] | select(.role == "user")] | length) == 1 and
  ([.tool_calls[] | select(.state == "none")] | length) == 0' "$tmp/body" >/dev/null \
  || fail "the child was not resumed (one task, every call answered): $(head -c 600 "$tmp/body")"
# a rollback of the paused parent stops its paused child: its turn cancelled (its stopped call
# is answered as interrupted when its next turn starts, as for any tool)
rm -f "$tmp/sleeper.pid"
expect 201 POST /v1/sessions '{"id": "p4"}'
sse ev4 p4
expect 202 POST /v1/sessions/p4/messages '{"content": "DELEGATE[math:TOOLSLEEP]"}'
wait_for test -s "$tmp/sleeper.pid" || fail "the child's tool did not start (pause, rollback)"
expect 202 POST /v1/sessions/p4/events/pause
wait_for has_event "$tmp/ev4" '.event == "agent_done" and .data.outcome == "paused"' || fail "p4 not paused"
pkid=$(curl -s "$url/v1/sessions/p4" | jq -r '.children[0].session')
wait_for child_paused || fail "p4's child is not paused"
expect 202 POST /v1/sessions/p4/events/rollback
child_cancelled() { curl -s "$url/v1/sessions/$pkid" | jq -e '.status == "idle" and .last_turn.outcome == "cancelled"' >/dev/null; }
wait_for child_cancelled || fail "the paused child after its parent's rollback: $(curl -s "$url/v1/sessions/$pkid" | head -c 500)"
expect 200 GET /v1/sessions/p4
jq -e '.status == "idle" and .last_turn.outcome == "rolled_back"' "$tmp/body" >/dev/null || fail "p4: $(head -c 300 "$tmp/body")"

# ---- with --db: a handoff moves the session to the named agent; a restart keeps it there -------
cat >"$tmp/ha.json" <<'JSON'
{"agents": [{"name": "b", "description": "Hands the conversation to b", "handoff": true,
             "system": "You are b.", "tools": ["hb.json"]}]}
JSON
cat >"$tmp/hb.json" <<'JSON'
{"agents": [{"name": "a", "description": "Hands the conversation to a", "handoff": true,
             "system": "You are a.", "tools": ["ha.json"]}]}
JSON
serve_db() { # $1: the port file; then the server's own options
  local pf=$1; shift
  AGENTC_TEST_KEY=sk-test "$agentc" serve --db "$tmp/h.db" --listen 127.0.0.1:0 --port-file "$tmp/$pf" \
    --base-url "http://127.0.0.1:$(cat "$tmp/model.port")/v1" --model m --api-key-env AGENTC_TEST_KEY \
    "$@" 2>>"$tmp/h.err" &
  srv=$!
  pids+=("$srv")
  wait_for test -s "$tmp/$pf" || fail "the --db server did not start"
  url="http://127.0.0.1:$(cat "$tmp/$pf")"
}
serve_db h1.port --system "You are a." --tools "$tmp/ha.json"
: >"$tmp/requests"
expect 201 POST /v1/sessions '{"id": "h"}'
sse evh h
expect 202 POST /v1/sessions/h/messages '{"content": "TRANSFER[b] one"}'
wait_for has_event "$tmp/evh" '.event == "turn_done" and .data.answer == "b answers: TRANSFER[b] one"' \
  || fail "b did not answer: $(cat "$tmp/evh")"
has_event "$tmp/evh" '.event == "agent_changed" and .data.reason == "handoff" and .data.agent == "b"' \
  || fail "no agent_changed on the stream: $(grep -A1 agent_changed "$tmp/evh")"
expect 200 GET /v1/sessions/h
jq -e '.agent == "b" and .status == "idle"' "$tmp/body" >/dev/null || fail "after the handoff: $(head -c 300 "$tmp/body")"
kill -9 "$srv"; wait "$srv" 2>/dev/null
serve_db h2.port --system "You are a." --tools "$tmp/ha.json"
expect 202 POST /v1/sessions/h/messages '{"content": "TRANSFER[b] two"}'
sse evh2 h
wait_for has_event "$tmp/evh2" '.event == "turn_done" and .data.answer == "b answers: TRANSFER[b] two"' \
  || fail "after a restart b does not hold the conversation: $(tail -c 600 "$tmp/evh2")"
expect 202 POST /v1/sessions/h/messages '{"content": "TRANSFER[a] three"}'
wait_for has_event "$tmp/evh2" '.event == "turn_done" and .data.answer == "a answers: TRANSFER[a] three"' \
  || fail "the handoff back: $(tail -c 600 "$tmp/evh2")"
sys_of() { jq -r '.body.messages[0].content' "$tmp/requests" | tr '\n' ' '; }
[ "$(sys_of)" = "You are a. You are b. You are b. You are b. You are a. " ] \
  || fail "the agents that saw the turns: $(sys_of)"

# ---- kill -9 mid-child: the restarted server resumes the tree, no call left unanswered ---------
cat >"$tmp/slow.json" <<JSON
{"tools": [{"name": "sleeper", "description": "Sleeps", "parameters": {"type": "object"},
            "command": ["sh", "-c", "echo \$\$ >'$tmp/sleeper.pid'; sleep 30; echo slept"]}],
 "agents": [{"name": "slow", "description": "A slow agent", "tools": ["slow.json"]}]}
JSON
kill -9 "$srv"; wait "$srv" 2>/dev/null
rm -f "$tmp/sleeper.pid"
serve_db k1.port --tools "$tmp/slow.json"
expect 201 POST /v1/sessions '{"id": "k"}'
expect 202 POST /v1/sessions/k/messages '{"content": "DELEGATE[slow:TOOLSLEEP]"}'
wait_for test -s "$tmp/sleeper.pid" || fail "the child's tool did not start (kill)"
kid=$(curl -s "$url/v1/sessions/k" | jq -r '.children[0].session')
[ "$kid" != null ] && expect 200 GET "/v1/sessions/$kid"
jq -e '.status == "running" and .parent.session == "k"' "$tmp/body" >/dev/null || fail "the child mid-turn: $(head -c 300 "$tmp/body")"
kill -9 "$srv"; wait "$srv" 2>/dev/null
kill "$(cat "$tmp/sleeper.pid")" 2>/dev/null # SIGKILL leaves the tool's group to its own end
serve_db k2.port --tools "$tmp/slow.json"
sse evk k
wait_for has_event "$tmp/evk" '.event == "turn_done"' || fail "the parent's turn did not finish: $(tail -c 600 "$tmp/evk")"
expect 200 GET /v1/sessions/k
jq -e '.status == "idle" and .answer == "The answer is The answer is Error: interrupted: the tool may or may not have completed.." and (.children | length) == 1 and .children[0].outcome == "completed"' \
  "$tmp/body" >/dev/null || fail "the parent after the restart: $(head -c 600 "$tmp/body")"
expect 200 GET "/v1/sessions/$kid"
jq -e '.status == "idle" and ([.tool_calls[] | select(.state == "none")] | length) == 0 and (.tool_calls | length) > 0' \
  "$tmp/body" >/dev/null || fail "the child after the restart: $(head -c 600 "$tmp/body")"
grep -q "Traceback\|AddressSanitizer" "$tmp/h.err" && fail "the --db server: $(cat "$tmp/h.err")"
echo "serve compose: ok"
