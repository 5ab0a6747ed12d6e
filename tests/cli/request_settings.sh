#!/usr/bin/env bash
# The model request settings of `agentc run` and `agentc batch`: what the
# loopback OpenAI-compatible server receives, and the settings refused at start
# (bad values, a setting the provider does not have, the pass-through's fields).
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$"
net=(--provider openai --base-url "$base" --model m --api-key-env AGENTC_TEST_KEY)
last_body() { tail -n1 "$tmp/requests" | jq -c '.body | del(.messages)'; }

# ---- every setting, as OpenAI receives it ---------------------------------------------
"$agentc" run "${net[@]}" --tools builtin:calculator --temperature 0.7 --top-p 0.9 \
  --stop END --stop STOP --seed 42 --tool-choice calculator --parallel-tool-calls false \
  --reasoning-effort low --request-json '{"user":"u1","top_p":0.5}' "What is 2 * 3?" \
  >"$tmp/out" 2>"$tmp/err" || fail "run: $(cat "$tmp/err")"
want='{"model":"m","temperature":0.7,"top_p":0.5,"stop":["END","STOP"],"seed":42,"reasoning_effort":"low","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"calculator","description":'
got=$(last_body)
[ "${got#"$want"}" != "$got" ] || fail "body: $got"
want_tail=',"tool_choice":{"type":"function","function":{"name":"calculator"}},"parallel_tool_calls":false,"user":"u1"}'
[ "${got%"$want_tail"}" != "$got" ] || fail "body end: $got"

# none and required with tools present; no settings: none sent
"$agentc" run "${net[@]}" --tools builtin:calculator --tool-choice none "What is 2 * 3?" \
  >/dev/null 2>"$tmp/err" || fail "none: $(cat "$tmp/err")"
[ "$(tail -n1 "$tmp/requests" | jq -c '[.body.tool_choice, .body.tools[0].function.name]')" = '["none","calculator"]' ] \
  || fail "tool_choice none: $(last_body)"
"$agentc" run "${net[@]}" --tools builtin:calculator --tool-choice required --parallel-tool-calls true \
  "What is 2 * 3?" >/dev/null 2>"$tmp/err" || fail "required: $(cat "$tmp/err")"
[ "$(tail -n1 "$tmp/requests" | jq -c '[.body.tool_choice, .body.parallel_tool_calls]')" = '["required",true]' ] \
  || fail "tool_choice required: $(last_body)"
"$agentc" run "${net[@]}" --tools builtin:calculator "What is 2 * 3?" >/dev/null 2>"$tmp/err" || fail "plain run"
[ "$(tail -n1 "$tmp/requests" | jq -c '.body | keys')" = '["messages","model","stream","stream_options","tools"]' ] \
  || fail "a run without settings sends: $(last_body)"

# batch takes the same flags
printf '{"id":"a","prompt":"What is 1 + 1?"}\n' >"$tmp/in.jsonl"
"$agentc" batch "$tmp/in.jsonl" "${net[@]}" --temperature 0 --stop X >"$tmp/out" 2>"$tmp/err" \
  || fail "batch: $(cat "$tmp/err")"
[ "$(tail -n1 "$tmp/requests" | jq -c '[.body.temperature, .body.stop]')" = '[0,["X"]]' ] \
  || fail "batch settings: $(last_body)"

# ---- refused at start ---------------------------------------------------------------
n_before=$(wc -l <"$tmp/requests")
refused() { # EXIT WANT-IN-STDERR ARGS...
  local want_rc=$1 want=$2; shift 2
  "$agentc" run "$@" hi >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq "$want_rc" ] || fail "$* exit $rc (want $want_rc): $(cat "$tmp/err")"
  grep -qF -- "$want" "$tmp/err" || fail "$*: stderr lacks '$want': $(cat "$tmp/err")"
}
anth=(--provider anthropic --base-url "http://127.0.0.1:$port" --model m --api-key-env AGENTC_TEST_KEY)
refused 3 "temperature 2.5 is out of range: OpenAI takes 0 to 2" "${net[@]}" --temperature 2.5
refused 3 "temperature 1.5 is out of range: Anthropic takes 0 to 1" "${anth[@]}" --temperature 1.5
refused 3 "top_p 2 is out of range: 0 to 1" "${net[@]}" --top-p 2
refused 3 "seed is not a setting Anthropic has (OpenAI only)" "${anth[@]}" --seed 1
refused 3 "reasoning_effort is not a setting Anthropic has" "${anth[@]}" --reasoning-effort high
refused 3 "reasoning_effort 'max' is not one of" "${net[@]}" --reasoning-effort max
refused 3 "request JSON may not set \"messages\"" "${net[@]}" --request-json '{"messages":[]}'
refused 3 "request JSON may not set \"tools\"" "${anth[@]}" --request-json '{"tools":[]}'
refused 3 "request JSON may not set \"stream\"" "${net[@]}" --request-json '{"stream":false}'
refused 3 "request JSON may not set \"system\"" "${anth[@]}" --request-json '{"system":"x"}'
refused 3 "request JSON must be a JSON object" "${net[@]}" --request-json '[1]'
refused 3 "request JSON is not valid JSON" "${net[@]}" --request-json '{'
refused 3 "tool_choice 'nosuch' names no configured tool" "${net[@]}" --tools builtin:calculator --tool-choice nosuch
refused 3 "tool_choice 'calculator' names no configured tool" "${net[@]}" --tool-choice calculator
refused 2 "--temperature takes a number, not 'hot'" "${net[@]}" --temperature hot
refused 2 "--seed takes an integer, not '1.5'" "${net[@]}" --seed 1.5
refused 2 "--parallel-tool-calls takes true or false, not 'yes'" "${net[@]}" --parallel-tool-calls yes
"$agentc" run "${net[@]}" hi --stop >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -qF -- "--stop needs a value" "$tmp/err" || fail "--stop without a value: $(cat "$tmp/err")"
"$agentc" batch "$tmp/in.jsonl" "${net[@]}" --tool-choice nosuch >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 3 ] && grep -qF "tool_choice 'nosuch' names no configured tool" "$tmp/err" && [ ! -s "$tmp/out" ] \
  || fail "batch with a bad tool_choice: exit $rc: $(cat "$tmp/err") $(cat "$tmp/out")"
"$agentc" batch "$tmp/in.jsonl" --provider anthropic --base-url "http://127.0.0.1:$port" --model m \
  --api-key-env AGENTC_TEST_KEY --seed 3 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 3 ] && grep -qF "seed is not a setting Anthropic has" "$tmp/err" || fail "batch --seed with Anthropic: exit $rc"
# the engine options are parsed by one parser for run, batch and serve: the same limits
many=(); for _ in $(seq 32); do many+=(--tools builtin:calculator); done
refused 2 "agentc: too many --tools options (at most 31)" "${net[@]}" "${many[@]}"
timeout 10 "$agentc" serve "${net[@]}" "${many[@]}" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -qF -- "agentc serve: too many --tools options (at most 31)" "$tmp/err" \
  || fail "serve with 32 --tools: exit $rc: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/requests")" -eq "$n_before" ] || fail "a refused run reached the server"
echo ok
