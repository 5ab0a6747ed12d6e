#!/usr/bin/env bash
# `agentc run` against the loopback OpenAI-compatible server: every option,
# output mode and exit status, checked from both ends (what agentc prints and
# what the server received).
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$-secret"
net=(--provider openai --base-url "$base" --model "model-$$" --api-key-env AGENTC_TEST_KEY)
last_req() { tail -n1 "$tmp/requests"; }

# ---- tools, header, system TEXT, trace, journal ------------------------------------------
"$agentc" run "${net[@]}" --header "X-Test-Header: hello-$$" --tools builtin:calculator \
  --system "You are terse $$." --journal "$tmp/j1" --trace \
  "What is 17 * 23, then 391 + 19?" >"$tmp/out" 2>"$tmp/err"
rc=$?; [ $rc -eq 0 ] || fail "run exit $rc: $(cat "$tmp/err")"
grep -qx "The answer is 410." "$tmp/out" || fail "answer: $(cat "$tmp/out")"
grep -Eq '^-> calculator \{"expression":"17 \* 23"\}$' "$tmp/out" || fail "tool call line"
grep -Eq '^<- calculator ok \([0-9]+ ms\): 391$' "$tmp/out" || fail "tool result line"
[ "$(wc -l <"$tmp/requests")" -eq 3 ] || fail "expected 3 LLM calls, got $(wc -l <"$tmp/requests")"
# trace format: MACHINE FROM --EVENT--> TO (SPEC:LINE), eventless as ---->
grep -Eq '^agent PLANNING ----> EXECUTING \(spec/agent\.fsm:[0-9]+\)$' "$tmp/err" || fail "eventless trace line"
grep -Eq '^process CALLING --llm\.started--> STREAMING \(spec/agent\.fsm:[0-9]+\)$' "$tmp/err" || fail "trace line"
grep -Eq '^session Running --agent\.COMPLETED--> Idle \(spec/agent\.fsm:[0-9]+\)$' "$tmp/err" || fail "final trace line"
# the server saw the model, the key, the header, the system message, the tools
r=$(last_req)
[ "$(jq -r .path <<<"$r")" = "/v1/chat/completions" ] || fail "path"
[ "$(jq -r .body.model <<<"$r")" = "model-$$" ] || fail "model not sent"
[ "$(jq -r .headers.authorization <<<"$r")" = "Bearer $AGENTC_TEST_KEY" ] || fail "key not sent"
[ "$(jq -r '.headers["x-test-header"]' <<<"$r")" = "hello-$$" ] || fail "--header not sent"
[ "$(jq -r '.body.messages[0].role + ":" + .body.messages[0].content' <<<"$r")" = "system:You are terse $$." ] \
  || fail "--system TEXT not sent"
[ "$(jq -r '.body.tools[0].function.name' <<<"$r")" = "calculator" ] || fail "tool not declared"
[ "$(jq -r '.body.stream' <<<"$r")" = "true" ] || fail "not streaming"
# the key is never printed, traced or journaled
for f in "$tmp/out" "$tmp/err" "$tmp/j1"; do
  ! grep -q "$AGENTC_TEST_KEY" "$f" || fail "API key leaked into $f"
done
"$agentc" replay "$tmp/j1" --check >"$tmp/r" || fail "journal does not replay"
bash tests/cli/spec_edits.sh "$agentc" "$tmp/j1" >/dev/null || fail "spec edits"
grep -q "every transition matches" "$tmp/r" || fail "replay --check output"

# ---- --system @FILE, a tools file, PROMPT - from stdin -------------------------------------
printf 'System prompt from a file, %s.\n' "$$" >"$tmp/system.txt"
cat >"$tmp/tools.json" <<JSON
{"tools": [{"name": "calculator", "description": "Evaluates arithmetic (external)",
            "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
                           "required": ["expression"]},
            "command": ["sh", "-c", "cat >'$tmp/tool_stdin'; printf 4242"]}]}
JSON
echo "What is 6 * 7?" | "$agentc" run "${net[@]}" --system "@$tmp/system.txt" --tools "$tmp/tools.json" - \
  >"$tmp/out" 2>"$tmp/err" || fail "tools file run: $(cat "$tmp/err")"
grep -qx "The answer is 4242." "$tmp/out" || fail "tools file tool did not run: $(cat "$tmp/out")"
[ "$(jq -r .expression "$tmp/tool_stdin")" = "6 * 7" ] || fail "tool got wrong arguments on stdin"
r=$(last_req)
[ "$(jq -r '.body.messages[0].content' <<<"$r")" = "System prompt from a file, $$." ] || fail "--system @FILE not sent"
[ "$(jq -r '.body.messages[1].content' <<<"$r")" = "What is 6 * 7?" ] || fail "stdin prompt not sent"
"$agentc" run "${net[@]}" --system "@$tmp/nonexistent" hi >/dev/null 2>&1
[ $? -eq 3 ] || fail "unreadable --system file should exit 3"
"$agentc" run "${net[@]}" --tools "$tmp/nonexistent.json" hi >/dev/null 2>&1
[ $? -eq 3 ] || fail "unreadable tools file should exit 3"

# ---- --jsonl: every line JSON, the types, last line done ------------------------------------
"$agentc" run "${net[@]}" --tools builtin:calculator --jsonl --trace "THINK: what is 2 * 21?" \
  >"$tmp/jl" 2>"$tmp/err" || fail "jsonl run"
every_line_json "$tmp/jl"
for t in reasoning text tool_call tool_result state done; do
  has_line "$tmp/jl" ".type == \"$t\"" || fail "jsonl: no $t line"
done
[ "$(tail -n1 "$tmp/jl" | jq -r '.type + " " + .status + " " + .answer')" = "done completed The answer is 42." ] \
  || fail "jsonl last line: $(tail -n1 "$tmp/jl")"
tail -n1 "$tmp/jl" | jq -e '.iterations == 2 and .usage.input > 0 and .usage.output > 0' >/dev/null \
  || fail "done line counts"
has_line "$tmp/jl" '.type == "state" and .machine == "agent" and .from == "PLANNING" and .event == "" and .to == "EXECUTING"' || fail "jsonl state line"
[ ! -s "$tmp/err" ] || fail "jsonl run wrote to stderr: $(cat "$tmp/err")"
"$agentc" run "${net[@]}" --jsonl "no trace: 1 + 1" >"$tmp/jl" 2>/dev/null || fail "jsonl run 2"
! grep -q '"type":"state"' "$tmp/jl" || fail "state lines without --trace"
# retry (503 then success), compacted, error
"$agentc" run "${net[@]}" --jsonl --param backoff_initial=10ms "FAIL503 then 5 + 5" --tools builtin:calculator \
  >"$tmp/jl" 2>/dev/null || fail "503 then success should complete"
every_line_json "$tmp/jl"
has_line "$tmp/jl" '.type == "retry" and .attempt == 1 and (.reason | test("503"))' || fail "no retry line"
tail -n1 "$tmp/jl" | jq -e '.status == "completed" and .answer == "The answer is 10."' >/dev/null || fail "after retry"
"$agentc" run "${net[@]}" --jsonl --tools builtin:calculator --param compact_threshold=50 --param compaction_keep=1 \
  "What is 1 + 2, 3 + 4 and 5 + 6?" >"$tmp/jl" 2>/dev/null || fail "compacting run"
has_line "$tmp/jl" '.type == "compacted" and .before > .after' || fail "no compacted line"
tail -n1 "$tmp/jl" | jq -e '.answer == "The answer is 11."' >/dev/null || fail "compacted run answer"
"$agentc" run "${net[@]}" --jsonl "FAIL401 please" >"$tmp/jl" 2>/dev/null
[ $? -eq 1 ] || fail "401 should exit 1"
every_line_json "$tmp/jl"
has_line "$tmp/jl" '.type == "error" and (.message | test("401"))' || fail "no error line"
tail -n1 "$tmp/jl" | jq -e '.type == "done" and .status == "failed"' >/dev/null || fail "failed done line"

# ---- --param is applied and checked -----------------------------------------------------------
"$agentc" run "${net[@]}" --tools builtin:calculator --param max_iterations=1 "What is 1 + 2 then 3 + 4?" \
  >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "max_iterations=1 should fail a 3-call task"
grep -q "max_iterations (1)" "$tmp/err" || fail "budget error: $(cat "$tmp/err")"
"$agentc" run "${net[@]}" --param max_retries=0 "FAIL503 again" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "max_retries=0 should fail on the first 503"
"$agentc" run "${net[@]}" --param nope=1 hi >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "unknown param should exit 2"
grep -q "nope" "$tmp/err" || fail "unknown param message"
"$agentc" run "${net[@]}" --param max_iterations=abc hi >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad param value should exit 2"

# ---- --spec FILE: an edited spec runs without rebuilding ---------------------------------------
sed 's/^param max_iterations .*/param max_iterations = 1/' spec/agent.fsm >"$tmp/edited.fsm"
"$agentc" run "${net[@]}" --spec "$tmp/edited.fsm" --tools builtin:calculator --trace --journal "$tmp/j2" \
  "What is 1 + 2 then 3 + 4?" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "edited spec (max_iterations = 1) should fail the task"
grep -Eq "^agent PLANNING ----> EXECUTING \(.*edited\.fsm:[0-9]+\)$" "$tmp/err" || fail "trace should name the edited spec"
"$agentc" replay "$tmp/j2" --check --spec "$tmp/edited.fsm" >/dev/null || fail "edited-spec journal replay"
"$agentc" run "${net[@]}" --spec "$tmp/edited.fsm" "hello" >/dev/null || fail "edited spec, a 1-call task"
printf 'machine m {\n  initial A\n  A -> B on x\n}\n' >"$tmp/bad.fsm"
"$agentc" run "${net[@]}" --spec "$tmp/bad.fsm" hi >/dev/null 2>"$tmp/err"
[ $? -eq 3 ] || fail "bad spec should exit 3"
grep -Eq 'bad\.fsm:[0-9]+:[0-9]+: ' "$tmp/err" || fail "bad spec message should be FILE:LINE:COL: $(cat "$tmp/err")"

# ---- exit statuses --------------------------------------------------------------------------------
"$agentc" run "${net[@]}" "2 + 2" >/dev/null 2>&1 || fail "exit 0"
"$agentc" run "${net[@]}" "FAIL401" >/dev/null 2>&1; [ $? -eq 1 ] || fail "exit 1"
"$agentc" run "${net[@]}" --frobnicate "2 + 2" >/dev/null 2>&1; [ $? -eq 2 ] || fail "exit 2 (bad flag)"
"$agentc" run "${net[@]}" a b >/dev/null 2>&1; [ $? -eq 2 ] || fail "exit 2 (two prompts)"
"$agentc" run "${net[@]}" --provider nope hi >/dev/null 2>&1; [ $? -eq 2 ] || fail "exit 2 (provider)"
env -u AGENTC_MODEL "$agentc" run --base-url "$base" --api-key-env AGENTC_TEST_KEY hi >/dev/null 2>"$tmp/err"
[ $? -eq 3 ] || fail "exit 3 (no model)"
grep -q -- "--model" "$tmp/err" || fail "no-model message"
"$agentc" run --base-url "ftp://127.0.0.1:$port/v1" --model m hi >/dev/null 2>&1; [ $? -eq 3 ] || fail "exit 3 (bad URL)"
"$agentc" run --help >"$tmp/help" && grep -q -- "--api-key-env" "$tmp/help" || fail "run --help"

# ---- the script provider: same output modes, no network -------------------------------------------
printf '%s\n' '{"reasoning": "hmm", "content": "Calling.", "tool_calls": [{"id": "c1", "name": "calculator", "arguments": "{\"expression\": \"32 * 32\"}"}]}' \
  '{"content": "It is 1024."}' >"$tmp/script.jsonl"
"$agentc" run --provider script --script "$tmp/script.jsonl" --tools builtin:calculator --jsonl x >"$tmp/jl" \
  || fail "script provider run"
every_line_json "$tmp/jl"
tail -n1 "$tmp/jl" | jq -e '.answer == "It is 1024."' >/dev/null || fail "script provider answer"
has_line "$tmp/jl" '.type == "tool_result" and .content == "1024"' || fail "script tool result"
echo "ok"
