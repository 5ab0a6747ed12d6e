#!/usr/bin/env bash
# Traces over OTLP/HTTP JSON: `agentc run` and `agentc batch` against the loopback model server,
# a second agentc_test_httpd as the collector storing each POST body. Span names, kinds,
# parentage, hex ids, GenAI attributes, the spec's transitions as events with their spec lines,
# the resource; contents only when asked; no secret in any exported byte; the exporter's faults
# (collector down, slow, 500, 429 with Retry-After, closing mid-request) leave the run's result
# as it was, its exit at most a second later, and what was dropped counted.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$-secret"
net=(--provider openai --base-url "$base" --model "model-$$" --api-key-env AGENTC_TEST_KEY
  --tools builtin:calculator --system "be terse $$")
prompt="What is 17 * 23, then 391 + 19?"
spec="$(pwd)/spec/agent.fsm"

collectors=()
# start_collector NAME ARGS...: an agentc_test_httpd logging to $tmp/NAME.log; sets $cport
start_collector() {
  local name="$1"; shift
  "$httpd" --port-file "$tmp/$name.port" --log "$tmp/$name.log" --mode calc "$@" &
  collectors+=($!)
  for _ in $(seq 1 600); do [ -s "$tmp/$name.port" ] && break; sleep 0.05; done
  [ -s "$tmp/$name.port" ] || fail "collector $name did not start"
  cport=$(cat "$tmp/$name.port")
}
stop_collectors() { for p in "${collectors[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap 'stop_collectors; cleanup' EXIT
# spans FILE: every exported span, one JSON object a line
spans() { jq -c '.body.resourceSpans[].scopeSpans[].spans[]' "$1"; }
attr() { jq -r --arg k "$2" '[.attributes[] | select(.key == $k) | .value[]] | first // empty' <<<"$1"; }

# ---- a turn with three model calls and two tool calls, contents off ---------------------
start_collector c1
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$cport" OTEL_SERVICE_NAME="svc-$$" \
  OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test$$" \
  OTEL_EXPORTER_OTLP_HEADERS="x-collector-token=tok%20$$" \
  "$agentc" run "${net[@]}" "$prompt" >"$tmp/out" 2>"$tmp/err"
rc=$?; [ $rc -eq 0 ] || fail "run exit $rc: $(cat "$tmp/err")"
grep -qx "The answer is 410." "$tmp/out" || fail "answer: $(cat "$tmp/out")"
sid=$(sed -n 's/^agentc: session //p' "$tmp/err")
[ -n "$sid" ] || fail "no session id on stderr: $(cat "$tmp/err")"
[ -s "$tmp/c1.log" ] || fail "nothing exported"
jq -e -s 'all(.[]; .method == "POST" and .path == "/v1/traces")' "$tmp/c1.log" >/dev/null || fail "export path"
jq -e -s --arg v "tok $$" 'all(.[]; .headers["x-collector-token"] == $v and
  (.headers["content-type"] | startswith("application/json")))' "$tmp/c1.log" >/dev/null \
  || fail "OTEL_EXPORTER_OTLP_HEADERS not sent (percent-decoded)"
jq -e -s --arg s "svc-$$" --arg e "test$$" 'all(.[]; .body.resourceSpans[0].resource.attributes as $a |
  ($a | any(.key == "service.name" and .value.stringValue == $s)) and
  ($a | any(.key == "deployment.environment" and .value.stringValue == $e)))' "$tmp/c1.log" \
  >/dev/null || fail "resource: $(jq -c '.body.resourceSpans[0].resource' "$tmp/c1.log" | head -1)"
spans "$tmp/c1.log" >"$tmp/s1"
[ "$(wc -l <"$tmp/s1")" -eq 6 ] || fail "expected 6 spans, got $(jq -r .name "$tmp/s1" | tr '\n' ,)"
[ "$(jq -r .name "$tmp/s1" | sort | uniq -c | awk '{print $1" "$2" "$3}' | tr '\n' ,)" = \
  "3 chat model-$$,2 execute_tool calculator,1 invoke_agent agent," ] || fail "span names: $(jq -r .name "$tmp/s1" | tr '\n' ,)"
root=$(jq -c 'select(.name == "invoke_agent agent")' "$tmp/s1")
rid=$(jq -r .spanId <<<"$root"); tid=$(jq -r .traceId <<<"$root")
# hex ids (the OTLP JSON mapping), one trace, parentage, kinds
jq -e -s 'all(.[]; (.traceId | test("^[0-9a-f]{32}$")) and (.spanId | test("^[0-9a-f]{16}$")))' "$tmp/s1" >/dev/null || fail "ids not hex"
jq -e -s --arg t "$tid" 'all(.[]; .traceId == $t)' "$tmp/s1" >/dev/null || fail "spans in more than one trace"
jq -e 'has("parentSpanId") | not' <<<"$root" >/dev/null || fail "the turn's span has a parent"
jq -e -s --arg r "$rid" 'map(select(.name != "invoke_agent agent")) | all(.[]; .parentSpanId == $r)' "$tmp/s1" >/dev/null \
  || fail "a model or tool span is not the turn's child"
jq -e -s 'all(.[]; if (.name | startswith("chat ")) then .kind == 3 else .kind == 1 end)' "$tmp/s1" >/dev/null || fail "kinds"
jq -e -s 'all(.[]; (.startTimeUnixNano | test("^[0-9]{19}$")) and (.endTimeUnixNano | test("^[0-9]{19}$")) and
  (.endTimeUnixNano >= .startTimeUnixNano))' "$tmp/s1" >/dev/null || fail "times"
# GenAI attributes
[ "$(attr "$root" gen_ai.operation.name)" = invoke_agent ] || fail "invoke_agent operation"
[ "$(attr "$root" agentc.turn.outcome)" = completed ] || fail "turn outcome"
jq -e -s --arg sid "$sid" 'all(.[]; any(.attributes[]; .key == "gen_ai.conversation.id" and .value.stringValue == $sid))' \
  "$tmp/s1" >/dev/null || fail "gen_ai.conversation.id is not the session id on every span"
chat=$(jq -c 'select(.name | startswith("chat "))' "$tmp/s1" | head -1)
[ "$(attr "$chat" gen_ai.operation.name)" = chat ] || fail "chat operation"
[ "$(attr "$chat" gen_ai.provider.name)" = openai ] || fail "provider name"
[ "$(attr "$chat" gen_ai.request.model)" = "model-$$" ] || fail "request model"
[ "$(attr "$chat" gen_ai.usage.input_tokens)" -gt 0 ] || fail "input tokens: $chat"
[ "$(attr "$chat" gen_ai.response.id)" = chatcmpl-test ] || fail "response id (the provider's): $chat"
jq -e '.attributes[] | select(.key == "gen_ai.response.finish_reasons") | .value.arrayValue.values[0].stringValue == "tool_calls"' \
  <<<"$chat" >/dev/null || fail "finish reasons: $chat"
tool=$(jq -c 'select(.name == "execute_tool calculator")' "$tmp/s1" | head -1)
[ "$(attr "$tool" gen_ai.tool.name)" = calculator ] || fail "tool name"
[ -n "$(attr "$tool" gen_ai.tool.call.id)" ] || fail "tool call id"
[ "$(attr "$tool" gen_ai.tool.type)" = function ] || fail "tool type"
# the spec's transitions, with the lines of spec/agent.fsm
line=$(grep -n 'CALLING -> STREAMING on llm.started' "$spec" | cut -d: -f1)
jq -e --arg l "$line" '.events | any(.name == "agentc.transition" and
  ([.attributes[] | {(.key): (.value | to_entries[0].value)}] | add) as $a |
  $a["agentc.machine"] == "process" and $a["agentc.from"] == "CALLING" and $a["agentc.to"] == "STREAMING" and
  $a["agentc.event"] == "llm.started" and $a["agentc.spec.line"] == $l)' <<<"$chat" >/dev/null \
  || fail "no transition CALLING -> STREAMING (line $line) on the chat span: $chat"
line=$(grep -n 'Idle    -> Running on user_message' "$spec" | cut -d: -f1)
jq -e --arg l "$line" '.events | any(([.attributes[] | {(.key): (.value | to_entries[0].value)}] | add) as $a |
  $a["agentc.from"] == "Idle" and $a["agentc.to"] == "Running" and $a["agentc.spec.line"] == $l)' <<<"$root" >/dev/null \
  || fail "no transition Idle -> Running (line $line) on the turn's span"
jq -e '.events | any(([.attributes[] | {(.key): (.value | to_entries[0].value)}] | add) as $a |
  $a["agentc.from"] == "OBSERVING" and $a["agentc.to"] == "COMPLETED" and ($a["agentc.guard"] | test("turn_complete")))' \
  <<<"$root" >/dev/null || fail "guard of the transition to COMPLETED"
jq -e -s 'all(.[] | (.events // [])[]; [.attributes[].value.stringValue] | index("llm.delta") | not)' "$tmp/s1" >/dev/null \
  || fail "an internal llm.delta row became an event"
# the model requests carried the trace context of their chat span
jq -r '.headers.traceparent // empty' "$tmp/requests" | tail -3 >"$tmp/tp"
[ "$(wc -l <"$tmp/tp")" -eq 3 ] || fail "model requests without traceparent: $(cat "$tmp/tp")"
while read -r tp; do
  [[ "$tp" =~ ^00-([0-9a-f]{32})-([0-9a-f]{16})-01$ ]] || fail "traceparent '$tp'"
  [ "${BASH_REMATCH[1]}" = "$tid" ] || fail "traceparent of another trace: $tp"
  jq -e -s --arg s "${BASH_REMATCH[2]}" 'any(.[]; .spanId == $s and (.name | startswith("chat ")))' "$tmp/s1" >/dev/null \
    || fail "traceparent $tp names no chat span"
done <"$tmp/tp"
# no content by default, no secret ever
! grep -q "be terse $$\|17 \* 23\|gen_ai.input.messages\|gen_ai.tool.call.arguments" "$tmp/c1.log" || fail "content exported by default"
! grep -q "$AGENTC_TEST_KEY" "$tmp/c1.log" || fail "API key exported"

# ---- contents when asked ------------------------------------------------------------------
start_collector c2
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="http://127.0.0.1:$cport/v1/traces" \
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true \
  "$agentc" run "${net[@]}" --temperature 0.5 --seed 7 --stop "END$$" --stop "FIN" \
  "$prompt \"quoted\"	tab \\ é" >"$tmp/out" 2>"$tmp/err" || fail "run with contents: $(cat "$tmp/err")"
spans "$tmp/c2.log" >"$tmp/s2"
chat=$(jq -c 'select(.name | startswith("chat "))' "$tmp/s2" | tail -1)
attr "$chat" gen_ai.input.messages | jq -e 'any(.[]; .role == "user" and .parts[0].content == "What is 17 * 23, then 391 + 19? \"quoted\"\ttab \\ é")' \
  >/dev/null || fail "input messages: $chat"
[ "$(attr "$chat" gen_ai.system_instructions)" = "be terse $$" ] || fail "system instructions"
# the request settings
[ "$(attr "$chat" gen_ai.request.temperature)" = 0.5 ] && [ "$(attr "$chat" gen_ai.request.seed)" = 7 ] \
  || fail "request settings: $chat"
jq -e --arg e "END$$" '.attributes[] | select(.key == "gen_ai.request.stop_sequences") |
  [.value.arrayValue.values[].stringValue] == [$e, "FIN"]' <<<"$chat" >/dev/null || fail "stop sequences: $chat"
attr "$chat" gen_ai.output.messages | jq -e '.[0].parts[0].content == "The answer is 410."' >/dev/null || fail "output messages"
tool=$(jq -c 'select(.name == "execute_tool calculator")' "$tmp/s2" | head -1)
[ "$(attr "$tool" gen_ai.tool.call.arguments)" = '{"expression":"17 * 23"}' ] || fail "tool arguments: $tool"
[ "$(attr "$tool" gen_ai.tool.call.result)" = 391 ] || fail "tool result"
! grep -q "$AGENTC_TEST_KEY" "$tmp/c2.log" || fail "API key exported with contents on"

# ---- a failed turn carries its reason ---------------------------------------------------------
start_collector c3
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$cport" "$agentc" run "${net[@]}" "FAIL401 1 + 1" >/dev/null 2>"$tmp/err"
[ $? -ne 0 ] || fail "FAIL401 succeeded"
spans "$tmp/c3.log" >"$tmp/s3"
root=$(jq -c 'select(.name == "invoke_agent agent")' "$tmp/s3")
[ "$(jq -r .status.code <<<"$root")" = 2 ] || fail "failed turn's status: $root"
[ "$(attr "$root" agentc.turn.outcome)" = failed ] || fail "failed outcome"
[ -n "$(attr "$root" agentc.fail.reason)" ] || fail "no fail reason"
chat=$(jq -c 'select(.name | startswith("chat "))' "$tmp/s3")
[ "$(jq -r .status.code <<<"$chat")" = 2 ] && [ -n "$(attr "$chat" error.type)" ] || fail "failed call: $chat"

# ---- batch: every session a trace ----------------------------------------------------------
start_collector c4
for i in 1 2 3 4 5; do printf '{"id": "b%d", "prompt": "What is %d * 3?"}\n' "$i" "$i"; done >"$tmp/in.jsonl"
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$cport" "$agentc" batch "$tmp/in.jsonl" "${net[@]}" \
  --concurrency 3 >"$tmp/out" 2>"$tmp/err" || fail "batch: $(cat "$tmp/err")"
spans "$tmp/c4.log" >"$tmp/s4"
[ "$(jq -r 'select(.name == "invoke_agent agent") | .traceId' "$tmp/s4" | sort -u | wc -l)" -eq 5 ] || fail "batch: not 5 traces"
[ "$(jq -r 'select(.name == "execute_tool calculator") | .name' "$tmp/s4" | wc -l)" -eq 5 ] || fail "batch: tool spans"

# ---- the --jsonl done line names the turn's trace; untraced, none -------------------------------
start_collector c7
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$cport" "$agentc" run "${net[@]}" --jsonl --no-store "$prompt" \
  >"$tmp/out" 2>"$tmp/err" || fail "run --jsonl traced: $(cat "$tmp/err")"
tr=$(jq -r 'select(.type == "done") | .trace_id' "$tmp/out")
spans "$tmp/c7.log" | jq -e -s --arg t "$tr" 'any(.[]; .name == "invoke_agent agent" and .traceId == $t)' >/dev/null \
  || fail "done's trace_id '$tr' is not the turn's trace"
"$agentc" run "${net[@]}" --jsonl --no-store "$prompt" >"$tmp/out" 2>&1 || fail "run --jsonl untraced"
jq -e 'select(.type == "done") | has("trace_id") | not' "$tmp/out" >/dev/null || fail "trace_id untraced"

# ---- --agent-name names the agent of the turn's span ----------------------------------------------
start_collector c6
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$cport" "$agentc" run "${net[@]}" --agent-name "helper$$" \
  --no-store "$prompt" >/dev/null 2>"$tmp/err" || fail "run --agent-name: $(cat "$tmp/err")"
spans "$tmp/c6.log" | jq -e -s --arg n "helper$$" 'any(.[]; .name == "invoke_agent " + $n and
  any(.attributes[]; .key == "gen_ai.agent.name" and .value.stringValue == $n))' >/dev/null \
  || fail "--agent-name not the turn span's agent: $(spans "$tmp/c6.log" | jq -r .name | tr '\n' ,)"

# ---- tracing off: nothing sent --------------------------------------------------------------
start_collector c5
for off in OTEL_SDK_DISABLED=true OTEL_TRACES_EXPORTER=none; do
  env "$off" OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$cport" "$agentc" run "${net[@]}" "$prompt" >/dev/null 2>&1 \
    || fail "run with $off"
done
"$agentc" run "${net[@]}" "$prompt" >/dev/null 2>&1 || fail "run without an endpoint"
[ -z "$(tail -3 "$tmp/requests" | jq -r '.headers.traceparent // empty')" ] || fail "traceparent sent untraced"
[ ! -s "$tmp/c5.log" ] || fail "exported while off"
OTEL_EXPORTER_OTLP_ENDPOINT="ftp://127.0.0.1:1" "$agentc" run "${net[@]}" "$prompt" >"$tmp/out" 2>"$tmp/err" \
  || fail "a bad endpoint failed the run"
grep -q "traces are off: OTEL_EXPORTER_OTLP_ENDPOINT" "$tmp/err" || fail "a bad endpoint is not said: $(cat "$tmp/err")"

# ---- the exporter's faults leave the run's result as it was -------------------------------------
dead=$(cat "$tmp/c5.port"); kill "${collectors[-1]}"; wait "${collectors[-1]}" 2>/dev/null
run_faulty() { # WHAT ENDPOINT DROPPED(0|1): the result as it was, the exit at most a second later,
  # what the exporter dropped counted (OTEL_LOG_LEVEL=info prints its account)
  local t0 t1
  t0=$(date +%s%N)
  OTEL_EXPORTER_OTLP_ENDPOINT="$2" OTEL_LOG_LEVEL=info "$agentc" run "${net[@]}" --jsonl "$prompt" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  t1=$(date +%s%N)
  [ $rc -eq 0 ] || fail "$1: exit $rc: $(cat "$tmp/err")"
  jq -e -s 'last | .type == "done" and .answer == "The answer is 410."' "$tmp/out" >/dev/null || fail "$1: result $(tail -1 "$tmp/out")"
  local limit=3000 # a run takes well under a second here, the flush one more at most
  [ -n "${AGENTC_TEST_UNDER_VALGRIND:-}" ] && limit=120000
  [ $(( (t1 - t0) / 1000000 )) -lt $limit ] || fail "$1: the run took $(( (t1 - t0) / 1000000 )) ms"
  local acct
  acct=$(sed -n 's/^agentc: traces: \([0-9]*\) spans exported ([0-9]* bytes), \([0-9]*\) dropped.*/\1 \2/p' "$tmp/err")
  [ -n "$acct" ] || fail "$1: no account of the exporter: $(cat "$tmp/err")"
  if [ "$3" = 1 ]; then [ "$acct" = "0 6" ] || fail "$1: exported, dropped: $acct (expected 0 6)"
  else [ "$acct" = "6 0" ] || fail "$1: exported, dropped: $acct (expected 6 0)"; fi
}
# a sub-agent's turn is traced in its parent's trace, under the parent's execute_tool span of
# the call, itself under the parent's turn
start_collector sub
echo '{"agents": [{"name": "math", "description": "Does arithmetic", "tools": ["builtin:calculator"]}]}' \
  >"$tmp/sup.json"
OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$cport" "$agentc" run --no-store "${net[@]}" \
  --tools "$tmp/sup.json" "DELEGATE[math:What is 6 * 7?]" >"$tmp/sub.out" 2>"$tmp/sub.err" \
  || fail "sub-agent run: $(cat "$tmp/sub.err")"
sleep 0.3
jq -c '.body.resourceSpans[].scopeSpans[].spans[]' "$tmp/sub.log" >"$tmp/sub.spans" 2>/dev/null
top=$(jq -c 'select(.name == "invoke_agent agent")' "$tmp/sub.spans" | head -n1)
call=$(jq -c 'select(.name == "execute_tool agent::math")' "$tmp/sub.spans" | head -n1)
kid=$(jq -c 'select(.name == "invoke_agent math")' "$tmp/sub.spans" | head -n1)
[ -n "$top" ] && [ -n "$call" ] && [ -n "$kid" ] || fail "sub-agent spans: $(jq -r .name "$tmp/sub.spans" | tr '\n' ' ')"
[ "$(jq -r .traceId <<<"$kid")" = "$(jq -r .traceId <<<"$top")" ] \
  && [ "$(jq -r .traceId <<<"$call")" = "$(jq -r .traceId <<<"$top")" ] \
  && [ "$(jq -r .parentSpanId <<<"$call")" = "$(jq -r .spanId <<<"$top")" ] \
  && [ "$(jq -r .parentSpanId <<<"$kid")" = "$(jq -r .spanId <<<"$call")" ] \
  || fail "the child's turn is not under its parent's call: $(jq -c '{name, spanId, parentSpanId}' "$tmp/sub.spans")"
run_faulty "collector down" "http://127.0.0.1:$dead" 1
start_collector slow --otlp-latency 5000
run_faulty "collector slow" "http://127.0.0.1:$cport" 1
start_collector e500 --otlp-status 500
run_faulty "collector 500" "http://127.0.0.1:$cport" 1
[ -s "$tmp/e500.log" ] || fail "nothing sent to the failing collector"
start_collector e429 --otlp-status 429 --otlp-retry-after 30
run_faulty "collector 429" "http://127.0.0.1:$cport" 1
start_collector ok
run_faulty "collector well" "http://127.0.0.1:$cport" 0
# a 429 with Retry-After during a run holds the next POSTs back until it is past: the batches
# that were ready meanwhile go after it, none before (each export's arrival is in the log)
for i in 1 2 3 4 5 6 7 8; do
  printf '{"tool_calls": [{"id": "r%d", "name": "calculator", "arguments": "{\\"expression\\": \\"%d * 2\\"}"}]}\n' "$i" "$i"
done >"$tmp/ra.jsonl"
echo '{"content": "done"}' >>"$tmp/ra.jsonl"
start_collector ra --otlp-status 429 --otlp-retry-after 1 --otlp-fail-first 1
OTEL_BSP_SCHEDULE_DELAY=50 OTEL_LOG_LEVEL=info OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$cport" \
  "$agentc" run --no-store --provider script --script "$tmp/ra.jsonl" --script-delay-ms 100 \
  --tools builtin:calculator "go" >"$tmp/ra.out" 2>"$tmp/ra.err" || fail "run against a 429 collector: $(cat "$tmp/ra.err")"
jq -c '[.t_ms, ([.body.resourceSpans[].scopeSpans[].spans[] | .endTimeUnixNano | tonumber / 1000000 | floor] | min)]' \
  "$tmp/ra.log" >"$tmp/ra.posts"
[ "$(wc -l <"$tmp/ra.posts")" -ge 3 ] || fail "429: too few exports: $(cat "$tmp/ra.posts")"
first=$(head -1 "$tmp/ra.posts" | jq '.[0]')
second=$(sed -n 2p "$tmp/ra.posts" | jq '.[0]')
ready=$(sed -n 2p "$tmp/ra.posts" | jq '.[1]')
[ $((second - first)) -ge 950 ] || fail "a POST $((second - first)) ms after a 429 with Retry-After: 1: $(cat "$tmp/ra.posts")"
[ $((ready - first)) -lt 700 ] || fail "no span was ready during the Retry-After (the test proves nothing): $(cat "$tmp/ra.posts")"
grep -Eq '^agentc: traces: [1-9][0-9]* spans exported \([0-9]+ bytes\), [1-9][0-9]* dropped' "$tmp/ra.err" \
  || fail "429: the account: $(grep traces: "$tmp/ra.err")"
# a collector that closes the connection in the middle of the request
if command -v node >/dev/null; then
  node -e 'const s = require("net").createServer((c) => c.once("data", () => c.destroy()));
    s.listen(0, "127.0.0.1", () => require("fs").writeFileSync(process.argv[1], String(s.address().port)));
    setTimeout(() => process.exit(0), 60000).unref();' "$tmp/cut.port" &
  collectors+=($!)
  for _ in $(seq 1 600); do [ -s "$tmp/cut.port" ] && break; sleep 0.05; done
  run_faulty "collector closing mid-request" "http://127.0.0.1:$(cat "$tmp/cut.port")" 1
fi
echo ok
