#!/usr/bin/env bash
# agentc serve --db: a stored session brought to the server's agent when it loads, against
# the loopback model server (what it receives):
# - restarted on a spec whose rest state cannot be told (two states a turn returns to), the
#   session is refused, naming the state that spec lacks, and nothing is recorded;
# - restarted on a spec that names the session's states otherwise
#   (examples/specs/renamed_states.fsm), the session goes on in its rest state; its stream
#   read from Last-Event-ID 0 replays each part of its journal under the agent that recorded
#   it (the first turn's frames name `session`, the second's `conversation`);
# - a changed system prompt and output schema reach the next request; a session's own system
#   prompt (POST /v1/sessions {"system"}) stays through changes that do not name the system
#   prompt, and a change that does replaces it.
set -uo pipefail
agentc=$1 httpd=$2
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (agent_change.sh:${BASH_LINENO[0]}): $*" >&2; for f in "$tmp"/*.err; do tail -n 5 "$f" >&2; done; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
"$httpd" --port-file "$tmp/llm.port" --log "$tmp/requests" --mode calc &
pids+=("$!")
wait_for test -s "$tmp/llm.port" || fail "agentc_test_httpd did not start"
base="http://127.0.0.1:$(cat "$tmp/llm.port")/v1"
export AGENTC_TEST_KEY="sk-change-secret-$$"
db="$tmp/sessions.db"
run=0
start() {
  run=$((run + 1))
  rm -f "$tmp/port"
  "$agentc" serve --db "$db" --provider openai --base-url "$base" --model "m-$$" \
    --api-key-env AGENTC_TEST_KEY --listen 127.0.0.1:0 --port-file "$tmp/port" "$@" 2>"$tmp/run$run.err" &
  pid=$!
  pids+=("$pid")
  wait_for test -s "$tmp/port" || fail "server did not start: $(cat "$tmp/run$run.err")"
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
stop() { kill -TERM "$pid"; wait "$pid" || fail "graceful stop exit status"; }
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
nreq() { wc -l <"$tmp/requests"; }
last() { tail -n1 "$tmp/requests" | jq -c "$1"; }
turn() { # turn ID TEXT: a turn that ends (the model called)
  local n; n=$(nreq)
  j -X POST -d "$(jq -cn --arg t "$2" '{content: $t}')" "$url/v1/sessions/$1/messages" >"$tmp/posted"
  jq -e '.accepted == "started"' "$tmp/posted" >/dev/null || fail "$1: '$2' not accepted: $(cat "$tmp/posted")"
  wait_for sh -c "[ \"\$(curl -s --max-time 5 $url/v1/sessions/$1 | jq -r .status)\" = idle ] && [ \$(wc -l <'$tmp/requests') -gt $n ]" \
    || fail "$1: the turn did not end: $(j "$url/v1/sessions/$1" | jq -c '{status, error}')"
}
systems() { last '[.body.messages[] | select(.role == "system") | .content]'; }
renamed=examples/specs/renamed_states.fsm

start --system "SYS-A"
j -X POST -d '{"id": "a"}' "$url/v1/sessions" | jq -e '.id == "a"' >/dev/null || fail "create a"
j -X POST -d '{"id": "o", "system": "OWN"}' "$url/v1/sessions" | jq -e '.id == "o"' >/dev/null || fail "create o"
turn a "What is 1+1?"
[ "$(systems)" = '["SYS-A"]' ] || fail "a's system: $(systems)"
turn o "What is 2+2?"
[ "$(systems)" = '["OWN"]' ] || fail "o's system: $(systems)"
stop

# ---- a spec whose rest state cannot be told: refused, nothing recorded -----------------------
sed -e 's/^event turn.cancel, close$/event turn.cancel, close\noutside event park/' \
    -e 's/^    state OnHold$/    state OnHold\n    state Parked/' \
    -e 's/^    Idle    -> Completed on inactivity_timeout$/&\n    Working -> Parked on park\n    Parked -> Working on user_message \/ append_user_message/' \
    "$renamed" >"$tmp/two_rests.fsm"
grep -q "Working -> Parked on park" "$tmp/two_rests.fsm" || fail "the spec edit did not take"
events_before=$("$agentc" sessions list --db "$db" --json 2>/dev/null | jq -s -c '[.[] | {id, events}]')
start --system "SYS-A" --spec "$tmp/two_rests.fsm"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' --max-time 10 "$url/v1/sessions/a")
[ "$code" != 200 ] || fail "a loaded under a spec it cannot go on under: $(cat "$tmp/body")"
jq -e '.error.message | contains("cannot go on under the new spec: this spec has no state session.Idle")' "$tmp/body" >/dev/null \
  || fail "the client is not told why ($code): $(cat "$tmp/body")"
grep -q "cannot go on under the new spec: this spec has no state session.Idle" "$tmp/run$run.err" \
  || fail "the refusal is not said: $(cat "$tmp/run$run.err")"
stop
[ "$("$agentc" sessions list --db "$db" --json 2>/dev/null | jq -s -c '[.[] | {id, events}]')" = "$events_before" ] \
  || fail "the refused change wrote to the store"

# ---- the spec renamed: the sessions go on; the stream replays each part under its agent ------
start --system "SYS-A" --spec "$renamed"
turn a "What is 3+3?"
grep -q "session local/a: the agent changes from this turn on (spec)" "$tmp/run$run.err" \
  || fail "no change noted: $(cat "$tmp/run$run.err")"
turn o "What is 4+4?"
[ "$(systems)" = '["OWN"]' ] || fail "o's own system prompt did not stay through a spec change: $(systems)"
curl -s -N --max-time 2 -H "Last-Event-ID: 0" "$url/v1/sessions/a/events" >"$tmp/a.sse"
# the frames as {event, machine}, in order
awk '/^event: /{e=$2} /^data: /{sub(/^data: /, ""); print "{\"event\":\"" e "\",\"data\":" $0 "}"}' "$tmp/a.sse" >"$tmp/a.frames"
jq -s -e 'map(.event) | index("agent_changed") != null' "$tmp/a.frames" >/dev/null \
  || fail "no agent_changed frame: $(head -c 600 "$tmp/a.sse")"
jq -s -e '(map(.event) | index("agent_changed")) as $k
  | (.[:$k] | map(select(.event == "state_changed") | .data.machine) | index("session") != null and index("conversation") == null)
  and (.[$k:] | map(select(.event == "state_changed") | .data.machine) | index("conversation") != null and index("session") == null)' \
  "$tmp/a.frames" >/dev/null \
  || fail "the stream did not switch agent at the change: $(jq -s -c 'map(select(.event == "state_changed" or .event == "agent_changed") | [.event, .data.machine, .data.to_state])' "$tmp/a.frames")"
jq -s -e 'map(select(.event == "turn_done")) | length == 2' "$tmp/a.frames" >/dev/null \
  || fail "turn_done frames: $(jq -s -c 'map(.event)' "$tmp/a.frames")"
stop

# ---- the system prompt and the output schema changed ----------------------------------------
echo '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}' >"$tmp/schema.json"
start --system "SYS-B" --spec "$renamed" --output-schema "$tmp/schema.json" --param output_retries=0
j -X POST -d '{"content": "What is 5+5?"}' "$url/v1/sessions/a/messages" >/dev/null
wait_for sh -c "[ \"\$(curl -s --max-time 5 $url/v1/sessions/a | jq -r .status)\" = idle ]" || fail "a did not settle"
[ "$(systems)" = '["SYS-B"]' ] || fail "a's new system prompt not sent: $(systems)"
[ "$(last .body.response_format.json_schema.schema.required)" = '["n"]' ] \
  || fail "a's new output schema not asked for: $(last .body.response_format)"
grep "session local/a: the agent changes from this turn on" "$tmp/run$run.err" | tail -n1 | grep "system" | grep -q "output_schema" \
  || fail "a's change: $(cat "$tmp/run$run.err")"
j -X POST -d '{"content": "What is 6+6?"}' "$url/v1/sessions/o/messages" >/dev/null
wait_for sh -c "[ \"\$(curl -s --max-time 5 $url/v1/sessions/o | jq -r .status)\" = idle ]" || fail "o did not settle"
[ "$(systems)" = '["SYS-B"]' ] || fail "a change naming the system prompt did not replace o's own: $(systems)"
stop
"$agentc" sessions export local/a --db "$db" -o "$tmp/a.jsonl" 2>/dev/null || fail "export a"
"$agentc" replay "$tmp/a.jsonl" --check >"$tmp/rp" || fail "replay --check of a: $(cat "$tmp/rp")"
! grep -q "$AGENTC_TEST_KEY" "$db" "$tmp/a.jsonl" || fail "the key reached the store"
echo ok
