#!/usr/bin/env bash
# agentc serve --db: a stored session keeps its agent and its past across restarts. The
# gallery's tool budget (examples/specs/tool_budget.fsm): a turn of 3 tool calls, then the
# server restarted with --param max_tool_calls=2: the session loads, its agent change is
# journaled (agent.changed), turn 1 is not judged again and the next turn answers; restarted
# as before, it changes back and nothing runs again. POST /v1/sessions/{id}/fork
# {"at_turn": N, "id"?} makes a session of the journal up to the end of turn N that goes on
# alone, survives a restart, and refuses a turn not ended, a taken id and a bad body.
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (agent_memory.sh:${BASH_LINENO[0]}): $*" >&2; for f in "$tmp"/*.err; do tail -n 5 "$f" >&2; done; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
calls='[{"id":"c1","name":"calculator","arguments":"{\"expression\":\"1+1\"}"},{"id":"c2","name":"calculator","arguments":"{\"expression\":\"2+2\"}"},{"id":"c3","name":"calculator","arguments":"{\"expression\":\"3+3\"}"}]'
{
  jq -cn --argjson c "$calls" '{tool_calls: $c}'
  echo '{"content": "sums done"}'
  echo '{"content": "hi"}'
  echo '{"content": "third"}'
  echo '{"content": "fourth"}'
  echo '{"content": "fifth"}'
} >"$tmp/script"
db="$tmp/sessions.db"
run=0
start() {
  run=$((run + 1))
  rm -f "$tmp/port"
  "$agentc" serve --db "$db" --provider script --script "$tmp/script" --tools builtin:calculator \
    --spec examples/specs/tool_budget.fsm --listen 127.0.0.1:0 --port-file "$tmp/port" "$@" 2>"$tmp/run$run.err" &
  pid=$!
  pids+=("$pid")
  wait_for test -s "$tmp/port" || fail "server did not start: $(cat "$tmp/run$run.err")"
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
stop() { kill -TERM "$pid"; wait "$pid" || fail "graceful stop exit status"; }
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
answered() { j "$url/v1/sessions/$1" | jq -e --arg a "$2" '.status == "idle" and .answer == $a' >/dev/null; }
say() { # say ID TEXT ANSWER
  j -X POST -d "$(jq -cn --arg t "$2" '{content: $t}')" "$url/v1/sessions/$1/messages" >/dev/null
  wait_for answered "$1" "$3" || fail "$1: '$2' was not answered '$3': $(j "$url/v1/sessions/$1" | jq -c '{status, answer, error}')"
}
export_j() { rm -f "$tmp/j.jsonl"; "$agentc" sessions export "local/$1" --db "$db" -o "$tmp/j.jsonl" 2>/dev/null || fail "export $1"; }

start
j -X POST -d '{"id": "a"}' "$url/v1/sessions" | jq -e '.id == "a"' >/dev/null || fail "create"
say a "add three sums" "sums done"
stop
export_j a
end1=$(jq -s 'map(select(.n != null) | .n) | max' "$tmp/j.jsonl")
jq -c 'select(.n != null)' "$tmp/j.jsonl" >"$tmp/turn1"

# ---- restarted with a lower budget: turn 1 is not judged again -----------------------------
start --param max_tool_calls=2
say a "just say hi" "hi"
grep -q "session local/a: the agent changes from this turn on (params.max_tool_calls)" "$tmp/run$run.err" \
  || fail "no change noted: $(cat "$tmp/run$run.err")"
curl -s -N --max-time 2 "$url/v1/sessions/a/events" >"$tmp/a.sse"
grep -A1 "^event: agent_changed" "$tmp/a.sse" | grep '^data: ' | sed 's/^data: //' \
  | jq -e '.reason == "option" and .what == ["params.max_tool_calls"] and .agent == "default"' >/dev/null \
  || fail "no agent_changed frame: $(grep -A1 agent_changed "$tmp/a.sse")"
j "$url/v1/sessions/a" | jq -e '[.messages[] | select(.role == "user") | .content] == ["add three sums", "just say hi"]' >/dev/null \
  || fail "messages: $(j "$url/v1/sessions/a" | jq -c .messages)"
stop
export_j a
[ "$(jq -c --argjson k "$end1" 'select(.n != null and .n <= $k)' "$tmp/j.jsonl")" = "$(cat "$tmp/turn1")" ] \
  || fail "turn 1's events changed"
jq -s -e --argjson k "$end1" 'map(select(.ev == "agent.changed")) | length == 1 and .[0].n == $k + 1
  and .[0].data.what == ["params.max_tool_calls"]' "$tmp/j.jsonl" >/dev/null || fail "agent.changed: $(grep agent.changed "$tmp/j.jsonl")"
n2=$(jq -s 'map(select(.n != null) | .n) | max' "$tmp/j.jsonl")

# ---- restarted as before: it changes back, nothing runs again ------------------------------
start
j "$url/v1/sessions/a" | jq -e '.status == "idle" and .answer == "hi"' >/dev/null || fail "reload: $(j "$url/v1/sessions/a")"
say a "again" "third"
stop
export_j a
jq -s -e 'map(select(.ev == "agent.changed") | .data.what) == [["params.max_tool_calls"], ["params.max_tool_calls"]]' \
  "$tmp/j.jsonl" >/dev/null || fail "the change back: $(grep agent.changed "$tmp/j.jsonl" | jq -c .data.what)"
[ "$(jq -s '[.[] | select(.ev == "user_message")] | length' "$tmp/j.jsonl")" = 3 ] || fail "a turn ran again"
"$agentc" replay "$tmp/j.jsonl" --spec examples/specs/tool_budget.fsm --check >"$tmp/r" || fail "replay --check: $(cat "$tmp/r")"

# ---- fork -------------------------------------------------------------------------------------
start
j -X POST -d '{"at_turn": 2, "id": "b"}' "$url/v1/sessions/a/fork" >"$tmp/f"
jq -e '.id == "b" and .forked_from.id == "a" and .forked_from.at_turn == 2' "$tmp/f" >/dev/null || fail "fork: $(cat "$tmp/f")"
j "$url/v1/sessions/b" | jq -e '.status == "idle" and .answer == "hi" and
  ([.messages[] | select(.role == "user") | .content] == ["add three sums", "just say hi"])' >/dev/null \
  || fail "the fork: $(j "$url/v1/sessions/b" | jq -c '{status, answer, messages}')"
say b "on the fork" "third"
j "$url/v1/sessions/b" | jq -e '[.messages[] | select(.role == "user") | .content] == ["add three sums", "just say hi", "on the fork"]' >/dev/null \
  || fail "the fork's next turn: $(j "$url/v1/sessions/b" | jq -c .messages)"
j "$url/v1/sessions/a" | jq -e '[.messages[] | select(.role == "user")] | length == 3' >/dev/null || fail "the original changed"
j -X POST -d '{"at_turn": 1}' "$url/v1/sessions/a/fork" | jq -e '.id | startswith("a-fork")' >/dev/null || fail "a fork with a fresh id"
code() { curl -s -o "$tmp/body" -w '%{http_code}' --max-time 10 -H 'Content-Type: application/json' -X POST -d "$2" "$url/v1/sessions/$1/fork"; }
[ "$(code a '{"at_turn": 9}')" = 409 ] && jq -e '.error.message | test("no turn 9")' "$tmp/body" >/dev/null || fail "turn 9: $(cat "$tmp/body")"
[ "$(code a '{"at_turn": 1, "id": "b"}')" = 409 ] || fail "a taken id: $(cat "$tmp/body")"
[ "$(code a '{"at_turn": 0}')" = 400 ] || fail "turn 0: $(cat "$tmp/body")"
[ "$(code a '{"at_turn": "1"}')" = 400 ] || fail "a turn that is not a number: $(cat "$tmp/body")"
[ "$(code a '{"at_turn": 1, "id": "x/y"}')" = 400 ] || fail "a bad id: $(cat "$tmp/body")"
[ "$(code nosuch '{"at_turn": 1}')" = 404 ] || fail "no such session: $(cat "$tmp/body")"
stop
start
j "$url/v1/sessions/b" | jq -e '.answer == "third"' >/dev/null || fail "the fork after a restart: $(j "$url/v1/sessions/b")"
say b "still here" "fourth"
stop
echo ok
