#!/usr/bin/env bash
# agentc serve --agents FILE: two agents with different specs, models and tools in one server;
# each session's model requests (logged by the loopback OpenAI-compatible server) carry its
# agent's model and tools; per-session overrides (request settings, model, output schema)
# only where the agent lets them; GET /v1/agents holds no secret; the OpenAI-compatible front
# by agent name with the official `openai` npm package, and 404 model_not_found.
set -uo pipefail
agentc=$1 httpd=$2 modules=$3
here="$(cd "$(dirname "$0")" && pwd)"
for c in curl jq node; do command -v $c >/dev/null || { echo "SKIP: $c needed"; exit 77; }; done
mod="$(mkdir -p "$modules" && cd "$modules" && pwd)/node_modules/openai"
if [ ! -f "$mod/index.mjs" ]; then
  bash "$here/npm_install.sh" "$modules" || { echo "SKIP: the openai npm package cannot be installed"; exit 77; }
fi
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (agents.sh:${BASH_LINENO[0]}): $*" >&2; cat "$tmp/serve.err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s

"$httpd" --port-file "$tmp/llm.port" --log "$tmp/requests" --mode calc &
pids+=("$!")
wait_for test -s "$tmp/llm.port" || fail "agentc_test_httpd did not start"
base="http://127.0.0.1:$(cat "$tmp/llm.port")/v1"
export AGENTC_TEST_KEY="sk-agents-secret-$$"
mkdir -p "$tmp/agents"
echo "You are SUPPORT." >"$tmp/agents/support.txt"
cp examples/specs/tool_budget.fsm "$tmp/agents/budget.fsm"
cat >"$tmp/agents/agents.json" <<JSON
{"agents": [
  {"name": "support", "base_url": "$base", "api_key_env": "AGENTC_TEST_KEY", "model": "m-support",
   "system": "@support.txt", "tools": ["builtin:clock"],
   "overridable": ["model", "request", "output_schema", "tools"]},
  {"name": "math", "spec": "budget.fsm", "base_url": "$base", "api_key_env": "AGENTC_TEST_KEY",
   "model": "m-math", "system": "You are MATH.", "tools": ["builtin:calculator"],
   "params": {"max_tool_calls": 3}, "request": {"temperature": 0.1}, "overridable": ["params"]}
]}
JSON
"$agentc" serve --agents "$tmp/agents/agents.json" --listen 127.0.0.1:0 --port-file "$tmp/port" \
  2>"$tmp/serve.err" &
pid=$!
pids+=("$pid")
wait_for test -s "$tmp/port" || fail "server did not start: $(cat "$tmp/serve.err")"
url="http://127.0.0.1:$(cat "$tmp/port")"
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
expect() { # expect STATUS CODE(or -) METHOD PATH [BODY]
  local want=$1 code=$2 m=$3 p=$4 body=${5-} got
  got=$(j -o "$tmp/body" -w '%{http_code}' -X "$m" ${body:+--data-binary "$body"} "$url$p")
  [ "$got" = "$want" ] || fail "$m $p $body -> $got, expected $want: $(head -c 300 "$tmp/body")"
  [ "$code" = - ] || jq -e --arg c "$code" '.error.code == $c' "$tmp/body" >/dev/null \
    || fail "$m $p -> $(head -c 300 "$tmp/body"), expected code $code"
}
turn() { # turn SESSION TEXT: posts a message and waits for the turn's end
  local n; n=$(wc -l <"$tmp/requests" 2>/dev/null || echo 0)
  j -X POST -d "{\"content\": \"$2\"}" "$url/v1/sessions/$1/messages" | jq -e '.accepted == "started"' >/dev/null \
    || fail "message to $1 not accepted"
  wait_for sh -c "[ \"\$(curl -s --max-time 5 $url/v1/sessions/$1 | jq -r .status)\" != running ] && [ \$(wc -l <'$tmp/requests') -gt $n ]" \
    || fail "$1: the turn did not end: $(j "$url/v1/sessions/$1")"
}
last() { tail -n1 "$tmp/requests" | jq -c "$1"; }

# ---- the agents listed, without a secret ----
expect 200 - GET /v1/agents
jq -e '[.data[].name] == ["support", "math"] and .default == "support"' "$tmp/body" >/dev/null \
  || fail "agents: $(cat "$tmp/body")"
grep -q "$AGENTC_TEST_KEY" "$tmp/body" && fail "GET /v1/agents shows the API key"
expect 200 - GET /v1/models
jq -e '[.data[].id] == ["support", "math"]' "$tmp/body" >/dev/null || fail "models: $(cat "$tmp/body")"
# the two specs
support_hash=$(j "$url/v1/spec?agent=support" | jq -r .hash)
math_hash=$(j "$url/v1/spec?agent=math" | jq -r .hash)
[ -n "$math_hash" ] && [ "$math_hash" != "$support_hash" ] || fail "one spec for both agents: $math_hash"
expect 404 agent_not_found GET "/v1/spec?agent=nope"

# ---- a session per agent: its model, tools, prompt, params ----
expect 201 - POST /v1/sessions '{"id": "m1", "agent": "math"}'
jq -e '.agent == "math"' "$tmp/body" >/dev/null || fail "session m1: $(cat "$tmp/body")"
expect 201 - POST /v1/sessions '{"id": "s1", "agent": "support"}'
expect 201 - POST /v1/sessions '{"id": "d1"}'
jq -e '.agent == "support"' "$tmp/body" >/dev/null || fail "the default agent: $(cat "$tmp/body")"
turn m1 "What is 2 * 3?"
j "$url/v1/sessions/m1" | jq -e '.answer == "The answer is 6."' >/dev/null || fail "m1: $(j "$url/v1/sessions/m1")"
[ "$(last '[.body.model, .body.temperature, [.body.tools[].function.name], .body.messages[0].content]')" = \
  '["m-math",0.1,["calculator"],"You are MATH."]' ] || fail "math's request: $(last .body)"
turn s1 "hello"
[ "$(last '[.body.model, .body.temperature, [.body.tools[].function.name], .body.messages[0].content]')" = \
  '["m-support",null,["clock"],"You are SUPPORT.\n"]' ] || fail "support's request: $(last .body)"
# math's spec: its tool budget (max_tool_calls 3) is its own
turn m1 "What is 1 + 1 + 1 + 1 + 1?"
j "$url/v1/sessions/m1" | jq -e '.status != "running"' >/dev/null || fail "m1 still running"

# ---- per-session overrides ----
expect 201 - POST /v1/sessions '{"id": "s2", "agent": "support", "model": "m-other", "request": {"temperature": 0.7, "stop": ["END"]}}'
turn s2 "hello"
[ "$(last '[.body.model, .body.temperature, .body.stop]')" = '["m-other",0.7,["END"]]' ] \
  || fail "overridden request: $(last .body)"
expect 201 - POST /v1/sessions '{"id": "s3", "agent": "support", "output_schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}, "tools": ["builtin:calculator"]}'
turn s3 "What is 3 * 3?"
last '.body.response_format.json_schema.schema.required' | grep -q '"answer"' \
  || fail "the session's output schema not asked for: $(last .body.response_format)"
jq -s -e '[.[] | select(.body.model == "m-support") | [.body.tools[]?.function.name]] | any(. == ["calculator"])' "$tmp/requests" >/dev/null \
  || fail "s3's tools"
# s1 again: its agent as it was
turn s1 "hello again"
[ "$(last '[.body.model, .body.temperature, .body.response_format]')" = '["m-support",null,null]' ] \
  || fail "s1 changed by another session's overrides: $(last .body)"
# refused
expect 400 invalid_agent POST /v1/sessions '{"agent": "math", "model": "x"}'
jq -e '.error.message | contains("does not let \"model\" be overridden")' "$tmp/body" >/dev/null || fail "$(cat "$tmp/body")"
expect 404 agent_not_found POST /v1/sessions '{"agent": "nope"}'
jq -e '.error.message == "unknown agent '"'"'nope'"'"' (the agents are: support, math)"' "$tmp/body" >/dev/null || fail "$(cat "$tmp/body")"
expect 400 invalid_agent POST /v1/sessions '{"agent": "support", "tools": ["/etc/tools.json"]}'
jq -e '.error.message | contains("may not name the server'"'"'s files")' "$tmp/body" >/dev/null || fail "$(cat "$tmp/body")"
expect 400 invalid_agent POST /v1/sessions '{"agent": "support", "request": {"temperature": "hot"}}'
expect 400 agent_failed POST /v1/sessions '{"agent": "support", "request": {"temperature": 5}}'
expect 400 invalid_agent POST /v1/sessions '{"agent": "support", "model": "sk-proj-0123456789abcdef"}'
expect 400 unknown_field POST /v1/sessions '{"agent": "support", "modle": "x"}'
expect 400 invalid_type POST /v1/sessions '{"agent": 5}'

# ---- engines of overridden agents: shared, kept while used, at most 32 ----
expect 201 - POST /v1/sessions '{"id": "same1", "agent": "support", "request": {"temperature": 0.7, "stop": ["END"]}, "model": "m-other"}'
expect 201 - POST /v1/sessions '{"id": "same2", "agent": "support", "request": {"temperature": 0.7, "stop": ["END"]}, "model": "m-other"}'
for i in $(seq 1 29); do # s2 and s3 hold two engines (same1 and same2 share s2's)
  expect 201 - POST /v1/sessions "{\"id\": \"e$i\", \"agent\": \"support\", \"request\": {\"seed\": $i}}"
done
expect 201 - POST /v1/sessions '{"id": "e30", "agent": "support", "request": {"seed": 30}}'
expect 429 too_many_agents POST /v1/sessions '{"id": "e31", "agent": "support", "request": {"seed": 31}}'
expect 201 - POST /v1/sessions '{"id": "e1b", "agent": "support", "request": {"seed": 1}}' # e1's engine
expect 200 - DELETE /v1/sessions/e2
expect 201 - POST /v1/sessions '{"id": "e31", "agent": "support", "request": {"seed": 31}}' # e2's was freed
turn e31 "hello"
[ "$(last '.body.seed')" = 31 ] || fail "e31's request: $(last .body)"
for i in 1 1b 3 4 5 6 7 8 9 $(seq 10 31); do expect 200 - DELETE "/v1/sessions/e$i"; done

# ---- the OpenAI-compatible front, by agent name ----
n=$(wc -l <"$tmp/requests")
OPENAI_MODULE="$mod" timeout 60 node "$here/agents_client.mjs" "$url/v1" || fail "the openai client failed"
jq -s -e --argjson n "$n" '.[$n:] | map(.body.model) | index("m-math") != null' "$tmp/requests" >/dev/null \
  || fail "the front's model math did not reach the math agent"
# the front's history as messages (not one flattened user message), the client's temperature
# where the agent lets it (support), the agent's own where not (math)
jq -s -e '[.[] | select(.body.messages[-1].content == "hello with history")][0].body
  | [.temperature, [.messages[] | [.role, .content]], [.tools[].function.name]] == [0.3, [["system", "be brief"], ["user", "first question"], ["assistant", "first answer"], ["user", "hello with history"]], ["clock", "lookup"]]' \
  "$tmp/requests" >/dev/null || fail "the front's history: $(grep 'hello with history' "$tmp/requests" | head -n1)"
jq -s -e '[.[] | select(.body.messages[-1].content == "What is 1 + 2?")][0].body.temperature == 0.1' \
  "$tmp/requests" >/dev/null || fail "math took the client's temperature"
expect 404 - POST /v1/chat/completions '{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}'
jq -e '.error.code == "model_not_found" and .error.type == "invalid_request_error" and .error.param == "model"' "$tmp/body" >/dev/null \
  || fail "model_not_found shape: $(cat "$tmp/body")"
grep -q "$AGENTC_TEST_KEY" "$tmp/serve.err" && fail "the API key in the server's log"
kill -TERM "$pid"; wait "$pid" || fail "graceful stop"

# ---- the command line's agent beside the file's, with run's request flags ----
rm -f "$tmp/port"
"$agentc" serve --agents "$tmp/agents/agents.json" --agent-name cli --provider openai --base-url "$base" \
  --api-key-env AGENTC_TEST_KEY --model m-cli --tools builtin:calculator --temperature 0.4 \
  --overridable model,request \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/serve.err" &
pid=$!
pids+=("$pid")
wait_for test -s "$tmp/port" || fail "server 2 did not start: $(cat "$tmp/serve.err")"
url="http://127.0.0.1:$(cat "$tmp/port")"
expect 200 - GET /v1/agents
jq -e '[.data[].name] == ["cli", "support", "math"] and .default == "cli" and .data[0].overridable == ["model", "request"]' "$tmp/body" >/dev/null \
  || fail "agents with the command line's: $(cat "$tmp/body")"
expect 201 - POST /v1/sessions '{"id": "c1", "request": {"top_p": 0.5}}'
turn c1 "hello"
[ "$(last '[.body.model, .body.temperature, .body.top_p]')" = '["m-cli",0.4,0.5]' ] || fail "cli agent: $(last .body)"
expect 200 - POST /v1/chat/completions '{"model": "m-cli", "messages": [{"role": "user", "content": "What is 4 * 4?"}]}'
jq -e '.choices[0].message.content == "The answer is 16." and .model == "cli"' "$tmp/body" >/dev/null || fail "front by --model name: $(cat "$tmp/body")"
kill -TERM "$pid"; wait "$pid" || fail "graceful stop 2"
# ---- serve --output-schema: the command line's agent asks for it as run does ----
echo '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}' >"$tmp/schema.json"
rm -f "$tmp/port"
"$agentc" serve --provider openai --base-url "$base" --api-key-env AGENTC_TEST_KEY --model m-s \
  --output-schema "$tmp/schema.json" --seed 5 --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/serve.err" &
pid=$!
pids+=("$pid")
wait_for test -s "$tmp/port" || fail "server 3 did not start: $(cat "$tmp/serve.err")"
url="http://127.0.0.1:$(cat "$tmp/port")"
expect 201 - POST /v1/sessions '{"id": "o1"}'
turn o1 "hello"
[ "$(last '[.body.model, .body.seed, .body.response_format.json_schema.schema.required]')" = '["m-s",5,["n"]]' ] \
  || fail "serve --output-schema: $(last .body)"
kill -TERM "$pid"; wait "$pid" || fail "graceful stop 3"

# ---- --db: a session keeps its agent and its overrides across a restart ----
serve_db() {
  rm -f "$tmp/port"
  "$agentc" serve --agents "$tmp/agents/agents.json" --db "$tmp/s.db" --listen 127.0.0.1:0 \
    --port-file "$tmp/port" 2>"$tmp/serve.err" &
  pid=$!
  pids+=("$pid")
  wait_for test -s "$tmp/port" || fail "server --db did not start: $(cat "$tmp/serve.err")"
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
serve_db
expect 201 - POST /v1/sessions '{"id": "k1", "agent": "support", "model": "m-kept", "request": {"temperature": 0.6}}'
turn k1 "hello"
expect 201 - POST /v1/sessions '{"id": "k2", "agent": "math"}'
turn k2 "What is 2 * 2?"
kill -TERM "$pid"; wait "$pid" || fail "graceful stop 3b"
# a key of support sessions may not override changes: it reaches k1 from its next turn on
jq '.agents[0].params = {"max_tokens": 77}' "$tmp/agents/agents.json" >"$tmp/a.json" \
  && mv "$tmp/a.json" "$tmp/agents/agents.json"
serve_db
turn k1 "hello again"
[ "$(last '[.body.model, .body.temperature, [.body.tools[].function.name], .body.max_tokens]')" = \
  '["m-kept",0.6,["clock"],77]' ] || fail "k1 after a restart: $(last .body)"
j "$url/v1/sessions/k1" | jq -e '.agent == "support"' >/dev/null || fail "k1's agent: $(j "$url/v1/sessions/k1")"
grep -q "session local/k1: the agent changes from this turn on (params.max_tokens)" "$tmp/serve.err" \
  || fail "k1's change not noted: $(cat "$tmp/serve.err")"
turn k2 "What is 3 * 3?"
[ "$(last '[.body.model, [.body.tools[].function.name]]')" = '["m-math",["calculator"]]' ] \
  || fail "k2 after a restart: $(last .body)"
kill -TERM "$pid"; wait "$pid" || fail "graceful stop 4"
"$agentc" sessions export local/k1 --db "$tmp/s.db" -o "$tmp/k1.jsonl" 2>/dev/null || fail "export k1"
jq -s -e 'map(select(.ev == "agent.changed") | .data.what) == [["params.max_tokens"]]' "$tmp/k1.jsonl" >/dev/null \
  || fail "k1's journal: $(grep agent.changed "$tmp/k1.jsonl")"
grep -q "$AGENTC_TEST_KEY" "$tmp/k1.jsonl" "$tmp/s.db" && fail "the API key stored"

# a name taken twice, an unknown overridable key: refused at start
"$agentc" serve --agents "$tmp/agents/agents.json" --agent-name math --model m --listen 127.0.0.1:0 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "called 'math', as one of --agents" "$tmp/err" || fail "a taken name: $(cat "$tmp/err")"
"$agentc" serve --model m --overridable modle --listen 127.0.0.1:0 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "'modle' is not a key" "$tmp/err" || fail "--overridable modle: $(cat "$tmp/err")"
"$agentc" serve --agents "$tmp/agents/agents.json" --overridable model --listen 127.0.0.1:0 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "overridable is of the command line's agent" "$tmp/err" || fail "--overridable alone: $(cat "$tmp/err")"
echo '{"agents": [{"name": "x", "base_url": "http://u:secret-pw@127.0.0.1:1/v1"}]}' >"$tmp/bad.json"
"$agentc" serve --agents "$tmp/bad.json" --listen 127.0.0.1:0 2>"$tmp/err"
[ $? -eq 3 ] && grep -q "holds credentials" "$tmp/err" && ! grep -q "secret-pw" "$tmp/err" || fail "a bad agents file: $(cat "$tmp/err")"
echo ok
