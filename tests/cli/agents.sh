#!/usr/bin/env bash
# `agentc run --agents FILE --agent NAME`: the agent's model, tools, params, system prompt
# (a path relative to the agents file) and request settings reach the model server; options
# given change only the keys the agent's "overridable" lists; bad files and names are refused
# before any request.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$"
mkdir -p "$tmp/agents" "$tmp/elsewhere"
echo "You are the calculating agent." >"$tmp/agents/calc.txt"
cat >"$tmp/agents/agents.json" <<JSON
{"agents": [
  {"name": "calc", "base_url": "$base", "api_key_env": "AGENTC_TEST_KEY", "model": "m-calc",
   "system": "@calc.txt", "tools": ["builtin:calculator"], "params": {"max_iterations": 5},
   "request": {"temperature": 0.3, "stop": ["END"]}, "overridable": ["model", "request"]},
  {"name": "plain", "base_url": "$base", "api_key_env": "AGENTC_TEST_KEY", "model": "m-plain",
   "system": "Plain."}
]}
JSON
last() { tail -n1 "$tmp/requests" | jq -c "$1"; }
repo=$PWD
cd "$tmp/elsewhere" || fail "cd"

# the example agents file runs (its agents let base_url and api_key_env be given)
"$agentc" run --no-store --agents "$repo/examples/agents/agents.json" --agent math --base-url "$base" \
  --api-key-env AGENTC_TEST_KEY "What is 7 * 6?" >"$tmp/out" 2>"$tmp/err" || fail "example math: $(cat "$tmp/err")"
grep -q "The answer is 42" "$tmp/out" || fail "example math answer: $(cat "$tmp/out")"
[ "$(last '[.body.model, .body.temperature, .body.parallel_tool_calls, [.body.tools[].function.name]]')" = \
  '["gpt-4o-mini",0,false,["calculator"]]' ] || fail "example math request: $(last .body)"

# the agent as it is
"$agentc" run --no-store --agents ../agents/agents.json --agent calc "What is 2 * 3?" \
  >"$tmp/out" 2>"$tmp/err" || fail "run calc: $(cat "$tmp/err")"
grep -q "The answer is 6" "$tmp/out" || fail "calc answer: $(cat "$tmp/out")"
[ "$(last '[.body.model, .body.temperature, .body.stop, [.body.tools[].function.name]]')" = \
  '["m-calc",0.3,["END"],["calculator"]]' ] || fail "calc request: $(last .body)"
[ "$(last '.body.messages[0]')" = '{"role":"system","content":"You are the calculating agent.\n"}' ] \
  || fail "system prompt from @calc.txt beside the agents file: $(last '.body.messages[0]')"

# another agent of the same file: its own model, no tools
"$agentc" run --no-store --agents ../agents/agents.json --agent plain "hello" \
  >"$tmp/out" 2>"$tmp/err" || fail "run plain: $(cat "$tmp/err")"
[ "$(last '[.body.model, (.body.tools // [] | length), .body.messages[0].content]')" = \
  '["m-plain",0,"Plain."]' ] || fail "plain request: $(last .body)"

# batch takes the same options
printf '{"id":"b1","prompt":"What is 3 * 3?"}\n' >"$tmp/in.jsonl"
"$agentc" batch "$tmp/in.jsonl" --no-store --agents ../agents/agents.json --agent calc >"$tmp/out" \
  2>"$tmp/err" || fail "batch: $(cat "$tmp/err")"
jq -e '.answer == "The answer is 9."' "$tmp/out" >/dev/null || fail "batch answer: $(cat "$tmp/out")"
[ "$(last '[.body.model, .body.temperature]')" = '["m-calc",0.3]' ] || fail "batch request: $(last .body)"

# overridable keys: the option wins, the other settings stay
"$agentc" run --no-store --agents ../agents/agents.json --agent calc --model m-other \
  --temperature 0.9 "What is 1 + 1?" >"$tmp/out" 2>"$tmp/err" || fail "override: $(cat "$tmp/err")"
[ "$(last '[.body.model, .body.temperature, .body.stop]')" = '["m-other",0.9,["END"]]' ] \
  || fail "overridden request: $(last .body)"

# a stored session remembers its named agent: the next turn needs no option
"$agentc" run --db "$tmp/s.db" --session s1 --agents ../agents/agents.json --agent calc "What is 2 * 3?" \
  >"$tmp/out" 2>"$tmp/err" || fail "run --session: $(cat "$tmp/err")"
"$agentc" run --db "$tmp/s.db" --session s1 "What is 5 + 5?" >"$tmp/out" 2>"$tmp/err" \
  || fail "run --session, no options: $(cat "$tmp/err")"
[ "$(last '[.body.model, .body.temperature, [.body.tools[].function.name]]')" = '["m-calc",0.3,["calculator"]]' ] \
  || fail "the remembered agent: $(last .body)"
"$agentc" sessions export s1 --db "$tmp/s.db" -o "$tmp/s1.jsonl" 2>"$tmp/err" || fail "export: $(cat "$tmp/err")"
jq -s -e 'map(select(.ev == "spawn")) | .[0].data.agent.name == "calc"' "$tmp/s1.jsonl" >/dev/null \
  || fail "the stored agent's name: $(jq -c 'select(.ev == "spawn") | .data.agent.name' "$tmp/s1.jsonl")"
grep -q "$AGENTC_TEST_KEY" "$tmp/s1.jsonl" && fail "the API key in the journal"

# refused before any request
n=$(wc -l <"$tmp/requests")
refused() { # EXIT WANT ARGS...
  local want_rc=$1 want=$2; shift 2
  "$agentc" run --no-store "$@" hi >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq "$want_rc" ] || fail "$* exit $rc (want $want_rc): $(cat "$tmp/err")"
  grep -qF -- "$want" "$tmp/err" || fail "$*: '$want' not in: $(cat "$tmp/err")"
}
refused 2 "agent 'calc' does not let \"tools\" be overridden (its \"overridable\": [\"model\",\"request\"])" \
  --agents ../agents/agents.json --agent calc --tools builtin:clock
refused 2 "agent 'plain' does not let \"model\" be overridden (its \"overridable\": none)" \
  --agents ../agents/agents.json --agent plain --model x
refused 2 "unknown agent 'nope' (the agents are: calc, plain)" \
  --agents ../agents/agents.json --agent nope
refused 2 "--agent NAME picks an agent of --agents FILE" --agent calc
refused 2 "--agents FILE needs --agent NAME" --agents ../agents/agents.json
echo '{"agents": [{"name": "x", "model": "sk-proj-0123456789abcdef"}]}' >"$tmp/secret.json"
refused 3 "agents[0]: agent 'x': \"model\" looks like a secret" --agents "$tmp/secret.json" --agent x
echo '{"agents": [{"name": "x", "temprature": 1}]}' >"$tmp/typo.json"
refused 3 "agent 'x': unknown key \"temprature\"" --agents "$tmp/typo.json" --agent x
grep -q "sk-proj-0123456789abcdef" "$tmp/err" && fail "a refused secret was printed"
[ "$(wc -l <"$tmp/requests")" -eq "$n" ] || fail "a refused run made a request"
echo ok
