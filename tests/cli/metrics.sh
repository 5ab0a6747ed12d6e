#!/usr/bin/env bash
# Metrics in the Prometheus text format, read by a strict parser (prom_check.awk):
# `agentc batch --metrics FILE` counts what the sessions' journals say happened (turns, model
# calls, tool calls, retries, transitions), and `agentc serve` answers GET /metrics behind its
# tokens or --metrics-token.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
need curl
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$-secret"
net=(--provider openai --base-url "$base" --model "model-$$" --api-key-env AGENTC_TEST_KEY
  --tools builtin:calculator)
check="$(dirname "$0")/prom_check.awk"
# sum FILE REGEX: the sum of the values of the parsed samples matching REGEX
sum() { awk -v re="$2" '$0 ~ re { s += $NF } END { printf "%d\n", s }' "$1"; }

# ---- batch --metrics against the journals ------------------------------------------------------
for i in 1 2 3 4 5 6; do printf '{"id": "b%d", "prompt": "What is %d * 3, then 5 + %d?"}\n' "$i" "$i" "$i"; done >"$tmp/in.jsonl"
printf '{"id": "f1", "prompt": "FAIL401 1 + 1"}\n{"id": "r1", "prompt": "FAIL503 2 + 2"}\n' >>"$tmp/in.jsonl"
"$agentc" batch "$tmp/in.jsonl" "${net[@]}" --concurrency 3 --no-store --journal-dir "$tmp/j" \
  --metrics "$tmp/m.txt" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] || fail "batch exit (one session fails by design): $(cat "$tmp/err")"
awk -f "$check" "$tmp/m.txt" >"$tmp/m.parsed" || fail "the metrics are not valid text format"
cat "$tmp/j"/*.journal | jq -c 'select(.ev)' >"$tmp/events"
cat "$tmp/j"/*.journal | jq -c 'select(.tr) | .tr[]' >"$tmp/steps"
n_ev() { jq -r --arg e "$1" 'select(.ev == $e) | .ev' "$tmp/events" | wc -l; }
[ "$(sum "$tmp/m.parsed" '^agentc_turns_total')" -eq "$(n_ev user_message)" ] || fail "turns: $(grep turns_total "$tmp/m.parsed")"
[ "$(sum "$tmp/m.parsed" '^agentc_turns_total\{outcome="failed"\}')" -eq 1 ] || fail "failed turns"
[ "$(sum "$tmp/m.parsed" '^agentc_turns_total\{outcome="completed"\}')" -eq 7 ] || fail "completed turns"
[ "$(sum "$tmp/m.parsed" '^agentc_turn_iterations_count')" -eq 8 ] || fail "iterations histogram count"
calls=$(( $(n_ev llm.completed) + $(n_ev llm.failed) ))
[ "$(sum "$tmp/m.parsed" '^agentc_llm_calls_total')" -eq "$calls" ] || fail "llm calls: $(grep llm_calls_total "$tmp/m.parsed"), journal $calls"
[ "$(sum "$tmp/m.parsed" '^agentc_llm_calls_total.*outcome="error"')" -eq "$(n_ev llm.failed)" ] || fail "failed llm calls"
tools=$(jq -r 'select(.ev == "tool.completed" and (.data.none | not)) | .ev' "$tmp/events" | wc -l)
[ "$tools" -gt 0 ] && [ "$(sum "$tmp/m.parsed" '^agentc_tool_calls_total\{outcome="ok",tool="calculator"\}')" -eq "$tools" ] \
  || fail "tool calls: $(grep tool_calls_total "$tmp/m.parsed"), journal $tools"
retries=$(jq -r 'select(.[1] == "RETRYING" and .[3] == "CALLING") | .[0]' "$tmp/steps" | wc -l)
[ "$retries" -ge 1 ] && [ "$(sum "$tmp/m.parsed" '^agentc_retries_total\{class="http"\}')" -eq "$retries" ] \
  || fail "retries: $(grep retries_total "$tmp/m.parsed"), journal $retries"
steps=$(jq -r 'select(.[2] != "llm.delta") | .[0]' "$tmp/steps" | wc -l)
[ "$(sum "$tmp/m.parsed" '^agentc_transitions_total')" -eq "$steps" ] || fail "transitions: $(sum "$tmp/m.parsed" '^agentc_transitions_total'), journal $steps"
in_tok=$(jq -r 'select(.ev == "llm.completed") | .data.usage.input' "$tmp/events" | awk '{s += $1} END {print s}')
[ "$(sum "$tmp/m.parsed" "^agentc_llm_tokens_total\\{model=\"model-$$\",type=\"input\"\\}")" -eq "$in_tok" ] || fail "input tokens"
grep -q '^agentc_build_info{version="[0-9.]*"} 1$' "$tmp/m.parsed" || fail "build info"
grep -q '^agentc_spans_dropped_total{} 0$' "$tmp/m.parsed" || fail "spans dropped"
grep -q '^agentc_state_seconds_count{machine="process",state="CALLING"}' "$tmp/m.parsed" || fail "time in state"
# no session id, prompt or key in a label
! grep -q '"b1"\|"f1"\|FAIL401\|What is\|sk-test' "$tmp/m.txt" || fail "tenant data in the metrics"

# ---- serve: GET /metrics behind the tokens ---------------------------------------------------
tok=tok-metrics-$$-0123456789
printf '%s alice\n' "$tok" >"$tmp/tokens"
serve() { # NAME ARGS...: starts agentc serve, sets $url
  local name="$1"; shift
  "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/$name.port" "${net[@]}" "$@" 2>"$tmp/$name.err" &
  serve_pid=$!
  for _ in $(seq 1 600); do [ -s "$tmp/$name.port" ] && break; sleep 0.05; done
  [ -s "$tmp/$name.port" ] || fail "serve did not start: $(cat "$tmp/$name.err")"
  url="http://127.0.0.1:$(cat "$tmp/$name.port")"
}
serve s1 --tokens "$tmp/tokens"
code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$url/metrics")
[ "$code" = 401 ] || fail "/metrics without a token: $code"
A=(-H "Authorization: Bearer $tok")
code=$(curl -s --max-time 5 -o "$tmp/sm" -D "$tmp/sh" -w '%{http_code}' "${A[@]}" "$url/metrics")
[ "$code" = 200 ] || fail "/metrics with a token: $code"
grep -qi '^content-type: text/plain; version=0.0.4' "$tmp/sh" || fail "content type: $(cat "$tmp/sh")"
awk -f "$check" "$tmp/sm" >/dev/null || fail "serve's metrics are not valid text format"
curl -s --max-time 5 "${A[@]}" -H 'Content-Type: application/json' -X POST -d '{"id": "s1"}' "$url/v1/sessions" >/dev/null
curl -s --max-time 5 "${A[@]}" -H 'Content-Type: application/json' -X POST -d '{"content": "What is 6 * 7?"}' "$url/v1/sessions/s1/messages" >/dev/null
for _ in $(seq 1 600); do
  curl -s --max-time 5 "${A[@]}" "$url/metrics" | awk -f "$check" >"$tmp/sp" 2>/dev/null
  [ "$(sum "$tmp/sp" '^agentc_turns_total\{outcome="completed"\}')" -eq 1 ] && break
  sleep 0.05
done
[ "$(sum "$tmp/sp" '^agentc_turns_total\{outcome="completed"\}')" -eq 1 ] || fail "serve: the turn not counted: $(cat "$tmp/sp")"
[ "$(sum "$tmp/sp" '^agentc_tool_calls_total')" -eq 1 ] || fail "serve: tool calls"
[ "$(sum "$tmp/sp" '^agentc_sessions\{status="idle"\}')" -eq 1 ] || fail "serve: sessions gauge: $(grep agentc_sessions "$tmp/sp")"
! grep -q 's1\|alice' "$tmp/sp" || fail "a session id or a token's name in a label"
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null
serve s2 --metrics-token "mt-$$"
code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$url/metrics")
[ "$code" = 401 ] || fail "/metrics without the metrics token: $code"
code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer mt-$$" "$url/metrics")
[ "$code" = 200 ] || fail "/metrics with the metrics token: $code"
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null

# ---- compactions: counted as the journal says, with the tokens they saved ----------------------
serve s3 --db "$tmp/s3.db" --param compact_threshold=300
curl -s --max-time 5 -H 'Content-Type: application/json' -d '{"id": "c"}' "$url/v1/sessions" >/dev/null
for i in 1 2 3 4; do
  curl -s --max-time 5 -H 'Content-Type: application/json' -d "{\"content\": \"What is $i * 3, then 5 + $i?\"}" \
    "$url/v1/sessions/c/messages" >/dev/null
  for _ in $(seq 1 600); do
    curl -s --max-time 5 "$url/v1/sessions/c" | jq -e '.status == "idle"' >/dev/null 2>&1 && break
    sleep 0.05
  done
done
curl -s --max-time 5 "$url/metrics" | awk -f "$check" >"$tmp/sc" || fail "serve's metrics (compactions)"
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null
done=$("$agentc" sessions export local/c --db "$tmp/s3.db" | jq -r 'select(.ev == "compaction.done") | .ev' | wc -l)
[ "$done" -ge 1 ] || fail "no compaction happened (compact_threshold=300)"
[ "$(sum "$tmp/sc" '^agentc_compactions_total')" -eq "$done" ] || fail "compactions: $(grep compactions "$tmp/sc"), journal $done"
[ "$(sum "$tmp/sc" '^agentc_compaction_tokens_saved_total\{strategy="sliding_window"\}')" -gt 0 ] \
  || fail "tokens saved: $(grep saved "$tmp/sc")"
echo ok
