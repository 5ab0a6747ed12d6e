#!/usr/bin/env bash
# An agent change through `agentc run --session`, against the loopback model server:
# - a spec that names the session's states otherwise (examples/specs/renamed_states.fsm):
#   the session at rest goes on in the new spec's rest state, the next turns run, and a
#   replay of its journal checks; a spec whose rest state cannot be told (two states a turn
#   returns to) is refused before anything is recorded, naming the state it lacks, and the
#   session goes on under its agent;
# - a changed system prompt and output schema reach the next request (what the server
#   receives), and stay for the turns after it.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$-secret"
export AGENTC_DB="$tmp/sessions.db"
net=(--provider openai --base-url "$base" --model "model-$$" --api-key-env AGENTC_TEST_KEY)
last_req() { tail -n1 "$tmp/requests"; }
nreq() { wc -l <"$tmp/requests"; }
journal() { rm -f "$tmp/j.jsonl"; "$agentc" sessions export "$1" -o "$tmp/j.jsonl" 2>/dev/null || fail "export $1"; }
changes() { journal "$1"; jq -s -c 'map(select(.ev == "agent.changed") | .data.what)' "$tmp/j.jsonl"; }

# ---- a spec that renames the session's states: mapped to its rest state ---------------------
"$agentc" run "${net[@]}" --session r "What is 1+1?" >"$tmp/out" 2>"$tmp/err" || fail "r turn 1: $(cat "$tmp/err")"
"$agentc" run --session r --spec examples/specs/renamed_states.fsm "What is 2+2?" >"$tmp/out" 2>"$tmp/err" \
  || fail "r turn 2 under the renamed spec: $(cat "$tmp/err")"
grep -q "The answer is" "$tmp/out" || fail "r turn 2 answer: $(cat "$tmp/out")"
grep -q "the agent changes from this turn on (spec)" "$tmp/err" || fail "r turn 2: $(cat "$tmp/err")"
"$agentc" run --session r "What is 3+3?" >"$tmp/out" 2>"$tmp/err" || fail "r turn 3 (the session bricked?): $(cat "$tmp/err")"
grep -q "The answer is" "$tmp/out" || fail "r turn 3 answer: $(cat "$tmp/out")"
"$agentc" sessions show r --json | jq -e '.session.states == [["conversation", "Idle"]]' >/dev/null \
  || fail "r: $("$agentc" sessions show r --json | jq -c .session.states)"
[ "$(changes r)" = '[["spec"]]' ] || fail "r's changes: $(changes r)"
"$agentc" replay "$tmp/j.jsonl" --check >"$tmp/rp" || fail "replay --check across the rename: $(cat "$tmp/rp")"
grep -q "conversation *Idle" "$tmp/rp" || fail "replay: $(cat "$tmp/rp")"

# ---- a spec whose rest state cannot be told: refused, nothing recorded -----------------------
sed -e 's/^event turn.cancel, close$/event turn.cancel, close\noutside event park/' \
    -e 's/^    state OnHold$/    state OnHold\n    state Parked/' \
    -e 's/^    Idle    -> Completed on inactivity_timeout$/&\n    Working -> Parked on park\n    Parked -> Working on user_message \/ append_user_message/' \
    examples/specs/renamed_states.fsm >"$tmp/two_rests.fsm"
grep -q "Working -> Parked on park" "$tmp/two_rests.fsm" || fail "the spec edit did not take"
"$agentc" check "$tmp/two_rests.fsm" >/dev/null || fail "two_rests.fsm does not check"
"$agentc" run "${net[@]}" --session x "What is 5+5?" >"$tmp/out" 2>"$tmp/err" || fail "x turn 1: $(cat "$tmp/err")"
journal x
before=$(jq -c 'select(.n != null)' "$tmp/j.jsonl")
n=$(nreq)
"$agentc" run --session x --spec "$tmp/two_rests.fsm" "What is 6+6?" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 3 ] || fail "the change was not refused (exit $rc): $(cat "$tmp/err")"
grep -q "session x cannot change its agent (spec): it cannot go on under the new spec: this spec has no state session.Idle" "$tmp/err" \
  || fail "the refusal does not name the state: $(cat "$tmp/err")"
grep -q "nothing was recorded" "$tmp/err" || fail "refusal: $(cat "$tmp/err")"
[ "$(nreq)" -eq "$n" ] || fail "a refused change called the model"
journal x
[ "$(jq -c 'select(.n != null)' "$tmp/j.jsonl")" = "$before" ] || fail "the refused change wrote to the journal"
"$agentc" run --session x "What is 7+7?" >"$tmp/out" 2>"$tmp/err" || fail "x after the refusal: $(cat "$tmp/err")"
grep -q "The answer is" "$tmp/out" || fail "x after the refusal: $(cat "$tmp/out")"

# ---- the system prompt and the output schema of a change reach the next request --------------
"$agentc" run "${net[@]}" --system "You are A." --session s "hello" >"$tmp/out" 2>"$tmp/err" || fail "s turn 1: $(cat "$tmp/err")"
jq -e '.body.messages[0] == {"role": "system", "content": "You are A."}' <<<"$(last_req)" >/dev/null \
  || fail "s turn 1 system: $(jq -c .body.messages <<<"$(last_req)")"
"$agentc" run --session s --system "You are B." "hello again" >"$tmp/out" 2>"$tmp/err" || fail "s turn 2: $(cat "$tmp/err")"
grep -q "the agent changes from this turn on (system)" "$tmp/err" || fail "s turn 2: $(cat "$tmp/err")"
jq -e '[.body.messages[] | select(.role == "system") | .content] == ["You are B."]
  and [.body.messages[] | select(.role == "user") | .content] == ["hello", "hello again"]' <<<"$(last_req)" >/dev/null \
  || fail "s turn 2 did not send the new system prompt alone: $(jq -c .body.messages <<<"$(last_req)")"
echo '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}' >"$tmp/schema.json"
"$agentc" run --session s --output-schema "$tmp/schema.json" "turn three" >"$tmp/out" 2>"$tmp/err"
grep -q "the agent changes from this turn on (output_schema)" "$tmp/err" || fail "s turn 3: $(cat "$tmp/err")"
jq -e '.body.response_format.json_schema.schema.required == ["n"]' <<<"$(last_req)" >/dev/null \
  || fail "s turn 3 did not ask for the schema: $(jq -c '.body | del(.messages)' <<<"$(last_req)")"
"$agentc" run --session s "turn four" >"$tmp/out" 2>"$tmp/err"
! grep -q "agent changes" "$tmp/err" || fail "s turn 4 changed the agent: $(cat "$tmp/err")"
jq -e '.body.response_format.json_schema.schema.required == ["n"]
  and [.body.messages[] | select(.role == "system") | .content] == ["You are B."]' <<<"$(last_req)" >/dev/null \
  || fail "s turn 4 lost the schema or the prompt: $(jq -c '.body | del(.tools)' <<<"$(last_req)")"
[ "$(changes s)" = '[["system"],["output_schema"]]' ] || fail "s's changes: $(changes s)"
jq -s -e 'map(select(.ev == "agent.changed") | .data) | .[0].system == "You are B." and (.[0] | has("output_schema") | not)
  and .[1].output_schema.required == ["n"] and (.[1] | has("system") | not)' "$tmp/j.jsonl" >/dev/null \
  || fail "the records: $(grep agent.changed "$tmp/j.jsonl")"
"$agentc" replay "$tmp/j.jsonl" --check >"$tmp/rp" || fail "replay --check of s: $(cat "$tmp/rp")"
echo ok
