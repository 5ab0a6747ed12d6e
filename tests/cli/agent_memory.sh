#!/usr/bin/env bash
# A stored session remembers its agent and never judges its past again, through the real
# binary against the loopback model server: the gallery's tool budget
# (examples/specs/tool_budget.fsm) lowered after a turn of 3 tool calls (--param, and the
# spec file edited) lets the next turn run with one model call, turn 1 stays as recorded,
# and the turn after resumes nothing; a turn with no options runs with the first turn's
# model, tools, spec and settings (as the server sees them); an override is journaled
# (agent.changed) and used from its turn on; a tool file edited between turns is noted and
# used, and one that moved away is still the recorded one; `agentc replay` of a journal
# switches agent at each change; a batch's stored sessions keep the batch's agent; a session
# stored without an agent runs with the options given and records them; sessions show rebuilds
# a session under its stored agent's spec.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$-secret"
export AGENTC_DB="$tmp/sessions.db"
spec=examples/specs/tool_budget.fsm
model=(--provider openai --base-url "$base" --model "model-$$" --api-key-env AGENTC_TEST_KEY
       --temperature 0.3)
net=("${model[@]}" --tools builtin:calculator)
nreq() { wc -l <"$tmp/requests"; }
last_req() { tail -n1 "$tmp/requests"; }
journal() { rm -f "$tmp/j.jsonl"; "$agentc" sessions export "$1" -o "$tmp/j.jsonl" 2>/dev/null || fail "export $1"; }
events_upto() { jq -c --argjson k "$2" 'select(.n != null and .n <= $k)' "$1"; }

# ---- the tool budget lowered by --param after a turn of 3 calls ---------------------------
"$agentc" run "${net[@]}" --spec "$spec" --session t "add 1+1 then 2+2 then 3+3" >"$tmp/out" 2>"$tmp/err" \
  || fail "turn 1: $(cat "$tmp/err")"
grep -qx "The answer is 6." "$tmp/out" || fail "turn 1 answer: $(cat "$tmp/out")"
[ "$(nreq)" -eq 4 ] || fail "turn 1 made $(nreq) model calls, not 4"
journal t
cp "$tmp/j.jsonl" "$tmp/turn1.jsonl"
end1=$(jq -s 'map(select(.n != null) | .n) | max' "$tmp/turn1.jsonl")
"$agentc" run --session t --param max_tool_calls=2 "just say hi" >"$tmp/out" 2>"$tmp/err" \
  || fail "turn 2 failed (turn 1 judged again?): $(cat "$tmp/err")"
[ "$(nreq)" -eq 5 ] || fail "turn 2 made $(($(nreq) - 4)) model calls, not 1"
! grep -q "tool budget\|tool-call budget" "$tmp/err" "$tmp/out" || fail "turn 2 re-judged turn 1: $(cat "$tmp/err")"
grep -q "the agent changes from this turn on (params.max_tool_calls)" "$tmp/err" \
  || fail "turn 2 did not note the change: $(cat "$tmp/err")"
journal t
[ "$(events_upto "$tmp/j.jsonl" "$end1")" = "$(events_upto "$tmp/turn1.jsonl" "$end1")" ] \
  || fail "turn 1's events changed"
jq -s -e --argjson k "$end1" 'map(select(.ev == "agent.changed")) | length == 1 and .[0].n == $k + 1
  and .[0].data.reason == "option" and .[0].data.what == ["params.max_tool_calls"]
  and .[0].data.agent.params.max_tool_calls == "2"' "$tmp/j.jsonl" >/dev/null \
  || fail "no agent.changed record after turn 1: $(grep agent.changed "$tmp/j.jsonl")"
! grep -q "$AGENTC_TEST_KEY" "$AGENTC_DB" "$tmp/j.jsonl" || fail "the key reached the store"
# turn 3 with no options: nothing resumed, nothing run again, the first turn's agent
"$agentc" run --session t "hello again" >"$tmp/out" 2>"$tmp/err" || fail "turn 3: $(cat "$tmp/err")"
! grep -q "resuming" "$tmp/err" || fail "turn 3 resumed a turn: $(cat "$tmp/err")"
! grep -q "agent changes" "$tmp/err" || fail "turn 3 changed the agent: $(cat "$tmp/err")"
[ "$(nreq)" -eq 6 ] || fail "turn 3 made $(($(nreq) - 5)) model calls, not 1"
r=$(last_req)
jq -e --arg m "model-$$" '.body.model == $m and .body.temperature == 0.3
  and ([.body.tools[].function.name] == ["calculator"])' <<<"$r" >/dev/null \
  || fail "turn 3 did not run with turn 1's model, tools and settings: $(jq -c '.body | del(.messages)' <<<"$r")"
"$agentc" resume t >"$tmp/out" 2>"$tmp/err" || fail "resume with no options: $(cat "$tmp/err")"
grep -q "has nothing to finish" "$tmp/out" || fail "resume: $(cat "$tmp/out")"
journal t
"$agentc" replay "$tmp/j.jsonl" --spec "$spec" --check >"$tmp/r" || fail "replay --check: $(cat "$tmp/r")"
"$agentc" replay "$tmp/j.jsonl" --check >"$tmp/r" || fail "replay --check under the recorded agents: $(cat "$tmp/r")"

# ---- replay switches agent at each change: a budget raised before a turn of 3 calls ----------
c() { jq -cn --arg e "$1" '{id: ("c" + $e), name: "calculator", arguments: ({expression: $e} | tojson)}'; }
{
  jq -cn --argjson a "$(c 7+7)" '{tool_calls: [$a]}'; echo '{"content": "fourteen"}'
  jq -cn --argjson a "$(c 1+1)" --argjson b "$(c 2+2)" --argjson d "$(c 3+3)" '{tool_calls: [$a, $b, $d]}'
  echo '{"content": "sums done"}'
} >"$tmp/up.jsonl"
"$agentc" run --provider script --script "$tmp/up.jsonl" --tools builtin:calculator --spec "$spec" \
  --param max_tool_calls=1 --session up "seven" >"$tmp/out" 2>"$tmp/err" || fail "up turn 1: $(cat "$tmp/err")"
"$agentc" run --param max_tool_calls=3 --session up "three sums" >"$tmp/out" 2>"$tmp/err" \
  || fail "up turn 2: $(cat "$tmp/err")"
grep -qx "sums done" "$tmp/out" || fail "up turn 2 answer: $(cat "$tmp/out")"
journal up
"$agentc" replay "$tmp/j.jsonl" --check >"$tmp/r" || fail "replay --check across the change: $(cat "$tmp/r")"
grep -q "check: every transition matches" "$tmp/r" || fail "replay: $(cat "$tmp/r")"
# under one agent (--spec, the params the session was created with: max_tool_calls=1) turn 2's
# three calls are judged again, and diverge
"$agentc" replay "$tmp/j.jsonl" --spec "$spec" --check >"$tmp/r"
[ $? -eq 1 ] && grep -q "divergence at event" "$tmp/r" || fail "replay under one agent: $(cat "$tmp/r")"

# ---- killed mid-turn: resume needs no options, and the turn ends under its own agent ----------
"$agentc" run "${net[@]}" --session slow --jsonl "Tell me SLOW things" >"$tmp/bg" 2>&1 &
bg=$!
for _ in $(seq 1 600); do grep -q '"type":"text"' "$tmp/bg" 2>/dev/null && break; sleep 0.05; done
grep -q '"type":"text"' "$tmp/bg" || fail "the slow answer did not start"
kill -9 "$bg"; wait "$bg" 2>/dev/null
"$agentc" run --session slow --model other "hi" >"$tmp/out" 2>"$tmp/err" && fail "a change mid-turn was not refused"
grep -q "stopped mid-turn; the options given change its agent (model)" "$tmp/err" || fail "mid-turn: $(cat "$tmp/err")"
"$agentc" resume slow --jsonl >"$tmp/out" 2>"$tmp/err" || fail "resume with no options: $(cat "$tmp/err")"
has_line "$tmp/out" '.type == "done" and .status == "completed" and (.answer | length > 0)' \
  || fail "resume did not finish: $(cat "$tmp/out")"
jq -e --arg m "model-$$" '.body.model == $m and .body.temperature == 0.3' <<<"$(last_req)" >/dev/null \
  || fail "resume did not run under the session's agent: $(jq -c '.body | del(.messages)' <<<"$(last_req)")"

# ---- an override is journaled and used from its turn on -----------------------------------
"$agentc" run --session t --model "other-$$" "and now?" >"$tmp/out" 2>"$tmp/err" || fail "override: $(cat "$tmp/err")"
jq -e --arg m "other-$$" '.body.model == $m' <<<"$(last_req)" >/dev/null || fail "the override was not used"
"$agentc" run --session t "still there?" >"$tmp/out" 2>"$tmp/err" || fail "after the override: $(cat "$tmp/err")"
jq -e --arg m "other-$$" '.body.model == $m and .body.temperature == 0.3' <<<"$(last_req)" >/dev/null \
  || fail "the override was not remembered"
journal t
jq -s -e 'map(select(.ev == "agent.changed") | .data.what) == [["params.max_tool_calls"], ["model"]]' \
  "$tmp/j.jsonl" >/dev/null || fail "agent.changed records: $(grep agent.changed "$tmp/j.jsonl" | jq -c .data.what)"

# ---- the spec file edited between turns ----------------------------------------------------
cp "$spec" "$tmp/budget.fsm"
"$agentc" run "${net[@]}" --spec "$tmp/budget.fsm" --session e "add 4+4 then 5+5 then 6+6" >"$tmp/out" 2>"$tmp/err" \
  || fail "edit turn 1: $(cat "$tmp/err")"
n=$(nreq)
sed -i 's/^param max_tool_calls     = 3/param max_tool_calls     = 2/' "$tmp/budget.fsm"
grep -q "^param max_tool_calls     = 2" "$tmp/budget.fsm" || fail "the spec edit did not take"
"$agentc" run --spec "$tmp/budget.fsm" --session e "just say hi" >"$tmp/out" 2>"$tmp/err" \
  || fail "edit turn 2 failed (turn 1 judged again?): $(cat "$tmp/err")"
[ "$(nreq)" -eq $((n + 1)) ] || fail "edit turn 2 made $(($(nreq) - n)) model calls"
grep -q "agent changes from this turn on (spec)" "$tmp/err" || fail "edit turn 2: $(cat "$tmp/err")"
"$agentc" run --session e "hello again" >"$tmp/out" 2>"$tmp/err" || fail "edit turn 3: $(cat "$tmp/err")"
! grep -q "resuming" "$tmp/err" || fail "edit turn 3 resumed a turn"
[ "$(nreq)" -eq $((n + 2)) ] || fail "edit turn 3 made $(($(nreq) - n - 1)) model calls"

# ---- a tool file edited between turns: noted, used; moved away: the recorded one ------------
mkdir -p "$tmp/kit"
cat >"$tmp/kit/tools.json" <<'JSON'
{"tools": [{"name": "where", "description": "version one", "command": ["echo", "here"]}]}
JSON
"$agentc" run "${model[@]}" --tools "$tmp/kit/tools.json" --session k "hello" >"$tmp/out" 2>"$tmp/err" \
  || fail "tools turn 1: $(cat "$tmp/err")"
jq -e '[.body.tools[].function.description] == ["version one"]' <<<"$(last_req)" >/dev/null || fail "tools turn 1 request"
sed -i 's/version one/version two/' "$tmp/kit/tools.json"
"$agentc" run --session k "hello again" >"$tmp/out" 2>"$tmp/err" || fail "tools turn 2: $(cat "$tmp/err")"
grep -q "agent changes from this turn on (tools)" "$tmp/err" || fail "tool file change not noted: $(cat "$tmp/err")"
jq -e '[.body.tools[].function.description] == ["version two"]' <<<"$(last_req)" >/dev/null \
  || fail "tools turn 2 did not use the edited file: $(jq -c .body.tools <<<"$(last_req)")"
mv "$tmp/kit" "$tmp/kit-moved"
"$agentc" run --session k "and again" >"$tmp/out" 2>"$tmp/err" || fail "tools turn 3 (file moved): $(cat "$tmp/err")"
! grep -q "agent changes" "$tmp/err" || fail "a moved tool file changed the agent: $(cat "$tmp/err")"
jq -e '[.body.tools[].function.description] == ["version two"]' <<<"$(last_req)" >/dev/null \
  || fail "tools turn 3 did not use the recorded file"
# ---- a batch's sessions keep the batch's agent ------------------------------------------------
printf '{"id": "b1", "prompt": "hello"}\n' >"$tmp/in.jsonl"
"$agentc" batch "$tmp/in.jsonl" "${model[@]}" --model "batch-$$" --db "$AGENTC_DB" >"$tmp/out" 2>"$tmp/err" \
  || fail "batch: $(cat "$tmp/err")"
"$agentc" run --session b1 "and now?" >"$tmp/out" 2>"$tmp/err" || fail "after the batch: $(cat "$tmp/err")"
! grep -q "agent changes" "$tmp/err" || fail "the batch's session changed agent: $(cat "$tmp/err")"
jq -e --arg m "batch-$$" '.body.model == $m and .body.temperature == 0.3' <<<"$(last_req)" >/dev/null \
  || fail "the batch's session did not keep its agent: $(jq -c '.body | del(.messages)' <<<"$(last_req)")"
# ---- sessions show rebuilds a session under its stored agent's spec (states renamed) ---------
echo '{"content": "renamed"}' >"$tmp/rn.jsonl"
"$agentc" run --provider script --script "$tmp/rn.jsonl" --spec examples/specs/renamed_states.fsm \
  --session rn "hi" >"$tmp/out" 2>"$tmp/err" || fail "renamed: $(cat "$tmp/err")"
"$agentc" sessions show rn --json | jq -e '.session.states == [["conversation", "Idle"]]' >/dev/null \
  || fail "sessions show: $("$agentc" sessions show rn --json | jq -c .session.states)"

# ---- a session stored without an agent (an older release): the options given, recorded -----
if command -v sqlite3 >/dev/null; then
  "$agentc" run "${net[@]}" --session leg "hello" >"$tmp/out" 2>"$tmp/err" || fail "leg turn 1: $(cat "$tmp/err")"
  sqlite3 "$AGENTC_DB" "UPDATE sessions SET agent = NULL WHERE id = 'leg'" || fail "sqlite3"
  "$agentc" run "${net[@]}" --model "leg-$$" --session leg "again" >"$tmp/out" 2>"$tmp/err" \
    || fail "leg turn 2: $(cat "$tmp/err")"
  "$agentc" run --session leg "and again" >"$tmp/out" 2>"$tmp/err" || fail "leg turn 3: $(cat "$tmp/err")"
  jq -e --arg m "leg-$$" '.body.model == $m' <<<"$(last_req)" >/dev/null || fail "leg: the options given were not recorded"
  journal leg
  jq -s -e 'map(select(.ev == "agent.changed") | .data.what) == [["agent"]]' "$tmp/j.jsonl" >/dev/null \
    || fail "leg: $(grep agent.changed "$tmp/j.jsonl" | jq -c .data.what)"
fi
echo ok
