#!/usr/bin/env bash
# --prices FILE: usage.cost_usd by each provider's own accounting, against hand computations.
# OpenAI's prompt_tokens_details.cached_tokens and Anthropic's cache read and write tokens are
# journaled in llm.completed usage; a model with no price has no cost; the shipped example
# prices load.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
export AGENTC_TEST_KEY="sk-test-$$"
mkdir -p "$tmp/oa" "$tmp/an"
cat >"$tmp/oa/01.sse" <<'SSE'
data: {"id":"c1","object":"chat.completion.chunk","model":"m-oa","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","model":"m-oa","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: {"id":"c1","object":"chat.completion.chunk","model":"m-oa","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":200,"prompt_tokens_details":{"cached_tokens":600},"completion_tokens_details":{"reasoning_tokens":50}}}

data: [DONE]

SSE
cat >"$tmp/an/01.sse" <<'SSE'
event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"usage":{"input_tokens":100,"cache_creation_input_tokens":2000,"cache_read_input_tokens":3000,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":300}}

event: message_stop
data: {"type":"message_stop"}

SSE
cat >"$tmp/prices.json" <<'JSON'
{"models": {"m-oa": {"input": 2.5, "output": 10, "cached_input": 1.25},
            "claude-x": {"input": 3, "output": 15, "cached_input": 0.3, "cache_write": 3.75},
            "m-plain": {"input": 1, "output": 2}}}
JSON
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-12) }'; }

# ---- OpenAI: (prompt - cached) * input + cached * cached_input + completion * output ----------
start_server --script "$tmp/oa"
"$agentc" run --provider openai --base-url "$base" --model m-oa --api-key-env AGENTC_TEST_KEY \
  --prices "$tmp/prices.json" --jsonl --no-store --journal "$tmp/j-oa" hi >"$tmp/out" 2>"$tmp/err" \
  || fail "openai run: $(cat "$tmp/err")"
cost=$(jq -r 'select(.type == "done") | .usage.cost_usd' "$tmp/out")
# (1000 - 600) * 2.5 + 600 * 1.25 + 200 * 10 = 1000 + 750 + 2000 = 3750 per million
near "$cost" 0.00375 || fail "openai cost $cost, expected 0.00375"
jq -e -s 'map(select(.ev == "llm.completed"))[0].data.usage == {"input": 1000, "output": 200, "cached": 600, "reasoning": 50}' \
  "$tmp/j-oa" >/dev/null || fail "openai usage journaled: $(grep llm.completed "$tmp/j-oa")"
jq -e -s 'map(select(.ev == "llm.completed"))[0].data | .response_id == "c1" and .response_model == "m-oa"' \
  "$tmp/j-oa" >/dev/null || fail "openai response id: $(grep llm.completed "$tmp/j-oa")"
# a model the prices do not name: no cost, never a made-up one
"$agentc" run --provider openai --base-url "$base" --model m-unpriced --api-key-env AGENTC_TEST_KEY \
  --prices "$tmp/prices.json" --jsonl --no-store hi >"$tmp/out" 2>"$tmp/err" || fail "unpriced run"
jq -e 'select(.type == "done") | .usage | has("cost_usd") | not' "$tmp/out" >/dev/null || fail "an unpriced model has a cost"
kill "$server_pid"; wait "$server_pid" 2>/dev/null; rm -f "$tmp/port"

# ---- Anthropic: input * input + cache_read * cached_input + cache_creation * cache_write + output
start_server --script "$tmp/an"
"$agentc" run --provider anthropic --base-url "http://127.0.0.1:$port" --model claude-x \
  --api-key-env AGENTC_TEST_KEY --prices "$tmp/prices.json" --jsonl --no-store --journal "$tmp/j-an" hi \
  >"$tmp/out" 2>"$tmp/err" || fail "anthropic run: $(cat "$tmp/err")"
cost=$(jq -r 'select(.type == "done") | .usage.cost_usd' "$tmp/out")
# 100 * 3 + 3000 * 0.3 + 2000 * 3.75 + 300 * 15 = 300 + 900 + 7500 + 4500 = 13200 per million
near "$cost" 0.0132 || fail "anthropic cost $cost, expected 0.0132"
jq -e -s 'map(select(.ev == "llm.completed"))[0].data.usage == {"input": 5100, "output": 300, "cached": 3000, "cache_write": 2000}' \
  "$tmp/j-an" >/dev/null || fail "anthropic usage journaled: $(grep llm.completed "$tmp/j-an")"
# the provider's response id and model, journaled (gen_ai.response.id on the chat span)
jq -e -s 'map(select(.ev == "llm.completed"))[0].data | .response_id == "msg_1" and .response_model == "claude-x"' \
  "$tmp/j-an" >/dev/null || fail "anthropic response id: $(grep llm.completed "$tmp/j-an")"
"$agentc" replay "$tmp/j-an" --check >/dev/null || fail "the journal does not replay"

# ---- a session's cost: stored with its agent, shown, continued (no --prices the second time) ----
an=(--provider anthropic --base-url "http://127.0.0.1:$port" --model claude-x --api-key-env AGENTC_TEST_KEY)
"$agentc" run "${an[@]}" --prices "$tmp/prices.json" --db "$tmp/s.db" --jsonl hi >"$tmp/out" 2>"$tmp/err" \
  || fail "stored run: $(cat "$tmp/err")"
sid=$(jq -r 'select(.type == "done") | .session' "$tmp/out")
"$agentc" run --session "$sid" --db "$tmp/s.db" --jsonl again >"$tmp/out" 2>"$tmp/err" || fail "continued: $(cat "$tmp/err")"
cost=$(jq -r 'select(.type == "done") | .usage.cost_usd' "$tmp/out")
near "$cost" 0.0264 || fail "the continued session's cost $cost, expected 0.0264 (two turns)"
"$agentc" sessions show "$sid" --db "$tmp/s.db" --json >"$tmp/show" || fail "sessions show"
near "$(jq -r .session.usage.cost_usd "$tmp/show")" 0.0264 || fail "sessions show --json: $(jq -c .session.usage "$tmp/show")"
"$agentc" sessions show "$sid" --db "$tmp/s.db" | grep -qx 'cost     \$0.026400' || fail "sessions show: no cost line"
# an agent's own prices (the document inline), and serve's session view
jq -n --arg b "http://127.0.0.1:$port" --slurpfile p "$tmp/prices.json" '{agents: [{name: "priced",
  provider: "anthropic", base_url: $b, model: "claude-x", api_key_env: "AGENTC_TEST_KEY", prices: $p[0]}]}' >"$tmp/agents.json"
"$agentc" run --agents "$tmp/agents.json" --agent priced --no-store --jsonl hi >"$tmp/out" 2>"$tmp/err" || fail "agent run: $(cat "$tmp/err")"
near "$(jq -r 'select(.type == "done") | .usage.cost_usd' "$tmp/out")" 0.0132 || fail "an agent's prices: $(tail -1 "$tmp/out")"
"$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/serve.port" "${an[@]}" --prices "$tmp/prices.json" 2>"$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 1 600); do [ -s "$tmp/serve.port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$tmp/serve.port")"
curl -s --max-time 5 -H 'Content-Type: application/json' -d '{"id": "p1"}' "$url/v1/sessions" >/dev/null
curl -s --max-time 5 -H 'Content-Type: application/json' -d '{"content": "hi"}' "$url/v1/sessions/p1/messages" >/dev/null
for _ in $(seq 1 600); do
  curl -s --max-time 5 "$url/v1/sessions/p1" >"$tmp/view"
  jq -e '.status == "idle"' "$tmp/view" >/dev/null 2>&1 && break
  sleep 0.05
done
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null
near "$(jq -r .usage.cost_usd "$tmp/view")" 0.0132 || fail "serve's session view: $(cat "$tmp/view")"

# ---- cost as spec facts: a budget is a spec edit ---------------------------------------------
sed -e 's|^param compact_threshold .*|&\nparam max_cost = 0|' \
  -e 's|^    OBSERVING -> COMPLETED  \[turn_complete \&\& answer_valid\]|    OBSERVING -> FAILED     [session.cost_usd > max_cost] / fail("budget spent")\n    OBSERVING -> FAILED     [turn.cost_usd >= 0.013] / fail("turn budget spent")\n&|' \
  spec/agent.fsm >"$tmp/budget.fsm"
[ "$(grep -c cost_usd "$tmp/budget.fsm")" -eq 2 ] || fail "the budget spec was not made"
budget() { # PARAMS...: the done line of a run on the budget spec
  "$agentc" run --spec "$tmp/budget.fsm" "${an[@]}" --no-store --jsonl "$@" hi >"$tmp/b.out" 2>"$tmp/err" # a failed turn: exit 1
  jq -c 'select(.type == "done")' "$tmp/b.out"
}
budget --prices "$tmp/prices.json" | jq -e '.status == "failed" and .error == "budget spent"' >/dev/null \
  || fail "session.cost_usd > max_cost (0) did not fail the turn: $(budget --prices "$tmp/prices.json")"
budget --prices "$tmp/prices.json" --param max_cost=1 | jq -e '.status == "failed" and .error == "turn budget spent"' >/dev/null \
  || fail "turn.cost_usd >= 0.013 did not fail the turn"
sed -i 's/turn.cost_usd >= 0.013/turn.cost_usd >= 0.014/' "$tmp/budget.fsm"
budget --prices "$tmp/prices.json" --param max_cost=1 | jq -e '.status == "completed"' >/dev/null \
  || fail "within the budget the turn did not complete"
budget | jq -e '.status == "completed" and (.usage | has("cost_usd") | not)' >/dev/null \
  || fail "an unpriced model spent a budget"

# ---- the batch's results, bad prices, the shipped example -------------------------------------
printf '{"id": "a", "prompt": "hi"}\n{"id": "b", "prompt": "hi"}\n' >"$tmp/in.jsonl"
"$agentc" batch "$tmp/in.jsonl" --provider anthropic --base-url "http://127.0.0.1:$port" --model claude-x \
  --api-key-env AGENTC_TEST_KEY --prices "$tmp/prices.json" --no-store >"$tmp/out" 2>"$tmp/err" || fail "batch: $(cat "$tmp/err")"
[ "$(jq -r .usage.cost_usd "$tmp/out" | sort -u)" = 0.0132 ] || fail "batch costs: $(cat "$tmp/out")"
echo '{"models": {"m": {"input": "cheap"}}}' >"$tmp/bad.json"
"$agentc" run --provider anthropic --base-url "http://127.0.0.1:$port" --model claude-x --api-key-env AGENTC_TEST_KEY \
  --prices "$tmp/bad.json" --no-store hi >/dev/null 2>"$tmp/err"
[ $? -eq 3 ] && grep -q "prices: model 'm' needs" "$tmp/err" || fail "bad prices: $(cat "$tmp/err")"
jq -e '.models | length > 0 and all(.[]; .input >= 0 and .output >= 0)' examples/prices.json >/dev/null || fail "examples/prices.json"
jq -e '.date | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}$")' examples/prices.json >/dev/null || fail "examples/prices.json is not dated"
"$agentc" run --provider anthropic --base-url "http://127.0.0.1:$port" --model claude-x --api-key-env AGENTC_TEST_KEY \
  --prices examples/prices.json --jsonl --no-store hi >"$tmp/out" 2>"$tmp/err" || fail "the example prices: $(cat "$tmp/err")"
echo ok
