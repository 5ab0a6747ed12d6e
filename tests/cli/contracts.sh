#!/usr/bin/env bash
# The spec<->C contract: a spec that renames or retypes a param a built-in handler needs is
# refused by `agentc check --handlers builtin` (located, naming the handler and the param) and
# by `agentc run --spec` before anything runs; the shipped spec passes. A param whose contract
# declares a default may be left out.
agentc="$1"
. "$(dirname "$0")/lib.sh"

"$agentc" check --handlers builtin spec/agent.fsm 2>"$tmp/ok" || fail "shipped spec refused: $(cat "$tmp/ok")"
"$agentc" check spec/agent.fsm 2>/dev/null || fail "check (the built-in handlers by default)"
"$agentc" check --handlers none spec/agent.fsm 2>/dev/null || fail "check --handlers none"

# rename the param the llm_request effect reads by name (max_tokens) and the one compact reads
sed 's/max_tokens/reply_cap/g' spec/agent.fsm >"$tmp/renamed.fsm"
"$agentc" check --handlers none "$tmp/renamed.fsm" 2>/dev/null \
  || fail "the renamed spec is well-formed on its own"
"$agentc" check "$tmp/renamed.fsm" 2>/dev/null && fail "check accepted the renamed spec: the default is the built-in handlers"
"$agentc" check --handlers builtin "$tmp/renamed.fsm" 2>"$tmp/err" && fail "renamed param accepted"
line=$(grep -n '^effect .*llm_request' "$tmp/renamed.fsm" | head -1 | cut -d: -f1)
grep -q "renamed.fsm:$line:[0-9]*: error: effect llm_request needs param max_tokens (int)" "$tmp/err" \
  || fail "no located error naming llm_request and max_tokens: $(cat "$tmp/err")"
grep -q "effect compact needs param max_tokens" "$tmp/err" || fail "compact not named: $(cat "$tmp/err")"
printf '{"content": "hi"}\n' >"$tmp/script.jsonl"
"$agentc" run --spec "$tmp/renamed.fsm" --provider script --script "$tmp/script.jsonl" hello \
  >"$tmp/out" 2>"$tmp/err2" && fail "agentc run accepted the renamed spec"
grep -q "effect llm_request needs param max_tokens" "$tmp/err2" || fail "run message: $(cat "$tmp/err2")"
[ -s "$tmp/out" ] && fail "something ran: $(cat "$tmp/out")"

# an effect argument of the wrong type is located at the argument
sed 's/effect run_tools(max_parallel_tools)/effect run_tools(stall_timeout)/' spec/agent.fsm >"$tmp/retyped.fsm"
"$agentc" check --handlers builtin "$tmp/retyped.fsm" 2>"$tmp/err3" && fail "retyped argument accepted"
line=$(grep -n 'effect run_tools(stall_timeout)' "$tmp/retyped.fsm" | cut -d: -f1)
col=$(grep 'effect run_tools(stall_timeout)' "$tmp/retyped.fsm" | awk '{print index($0, "stall_timeout")}')
grep -q "retyped.fsm:$line:$col: error: argument 1 of effect run_tools must be an int param; stall_timeout is a duration" "$tmp/err3" \
  || fail "argument error: $(cat "$tmp/err3")"
# values the built-in handlers cannot use are refused at start, not when first needed
"$agentc" run --provider script --script "$tmp/script.jsonl" --param compaction=bogus hi \
  >/dev/null 2>"$tmp/err4" && fail "compaction=bogus accepted"
grep -q "param compaction is 'bogus'; it must be one of sliding_window clear_tool_results summarize" \
  "$tmp/err4" || fail "compaction message: $(cat "$tmp/err4")"
"$agentc" run --provider script --script "$tmp/script.jsonl" --param max_iterations=-5 hi \
  >/dev/null 2>"$tmp/err5" && fail "max_iterations=-5 accepted"
grep -q "param max_iterations is -5; it must be at least 1" "$tmp/err5" \
  || fail "max_iterations message: $(cat "$tmp/err5")"
"$agentc" run --provider script --script "$tmp/script.jsonl" --param max_retries=0 hi >/dev/null \
  || fail "max_retries=0 refused"

# params a contract declares a default for (state_in_context, state_context_max, context_step):
# a spec without them runs with the contract's values and takes --param for them; one that
# declares them of another type is refused like any other
grep -vE '^param (state_in_context|state_context_max|context_step) ' spec/agent.fsm >"$tmp/nodefaults.fsm"
grep -q 'context_step' "$tmp/nodefaults.fsm" && fail "the stripped spec still declares context_step"
"$agentc" check --handlers builtin "$tmp/nodefaults.fsm" 2>"$tmp/err9" \
  || fail "a spec without the defaulted params refused: $(cat "$tmp/err9")"
"$agentc" run --spec "$tmp/nodefaults.fsm" --provider script --script "$tmp/script.jsonl" \
  --tools builtin:context --param state_context_max=100 --param state_in_context=0 hi \
  >"$tmp/out9" 2>"$tmp/err9" || fail "run without the defaulted params: $(cat "$tmp/err9")"
grep -q hi "$tmp/out9" || fail "no answer: $(cat "$tmp/out9")"
sed 's/^param state_in_context .*/param state_in_context = 10s/' spec/agent.fsm >"$tmp/statedur.fsm"
"$agentc" check --handlers builtin "$tmp/statedur.fsm" 2>"$tmp/err10" && fail "a duration state_in_context accepted"
grep -q "effect llm_request needs param state_in_context to be an int, not a duration" "$tmp/err10" \
  || fail "state_in_context message: $(cat "$tmp/err10")"

# a folder where a file belongs says so (the read error, not "Input/output error")
"$agentc" check "$tmp" 2>"$tmp/err6" && fail "a folder checked as a spec"
grep -q "Is a directory" "$tmp/err6" || fail "spec folder: $(cat "$tmp/err6")"
"$agentc" run --provider script --script "$tmp" hi 2>"$tmp/err7" && fail "a folder as script"
grep -q "Is a directory" "$tmp/err7" || fail "script folder: $(cat "$tmp/err7")"
"$agentc" run --provider script --script "$tmp/script.jsonl" --tools "$tmp" hi 2>"$tmp/err8" \
  && fail "a folder as tool file"
grep -q "is a directory" "$tmp/err8" || fail "tool file folder: $(cat "$tmp/err8")"

echo ok
