#!/usr/bin/env bash
# The demo completes offline, its journal replays with --check, an edited
# spec reports the first divergence, and the CLI's exit statuses hold.
set -uo pipefail
agentc="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$agentc" demo --journal "$tmp/j" >"$tmp/out" 2>"$tmp/err" || fail "demo exit $?"
grep -q "391 + 19 = 410" "$tmp/out" || fail "demo answer missing"
[ "$(grep -c "391 + 19 = 410" "$tmp/out")" -eq 1 ] || fail "demo printed its answer twice: $(cat "$tmp/out")"
printf '{"content": "Hello there."}\n' >"$tmp/hello.jsonl"
"$agentc" run --no-store --trace --provider script --script "$tmp/hello.jsonl" hi >"$tmp/out" 2>/dev/null \
  || fail "run --trace"
[ "$(cat "$tmp/out")" = "Hello there." ] || fail "run --trace printed: $(cat "$tmp/out")"
grep -q "session Running --agent.COMPLETED--> Idle" "$tmp/err" || fail "demo trace missing"
draw=$(sed -n 's/^  draw it: *agentc //p' "$tmp/err")
grep -q -- "--format dot$" <<<"$draw" || fail "the demo's hint is not the README's (--format dot): $draw"
"$agentc" $draw >"$tmp/draw.dot" && grep -q "^digraph agentc" "$tmp/draw.dot" \
  || fail "the demo's draw hint does not work: $draw"
"$agentc" demo --journal 2>"$tmp/e"; [ $? -eq 2 ] || fail "demo --journal without a value: exit"
grep -q "demo: --journal needs a value" "$tmp/e" || fail "demo --journal without a value: $(cat "$tmp/e")"
"$agentc" replay "$tmp/j" --check >"$tmp/r" || fail "replay --check failed"
grep -q "every transition matches" "$tmp/r" || fail "replay output"
sed 's/^param max_iterations .*/param max_iterations = 2/' spec/agent.fsm >"$tmp/edited.fsm"
"$agentc" replay "$tmp/j" --check --spec "$tmp/edited.fsm" >"$tmp/d" 2>&1
[ $? -eq 1 ] || fail "edited spec should diverge (exit 1)"
grep -q "divergence at event" "$tmp/d" || fail "divergence not reported"
"$agentc" replay "$tmp/j" --spec "$tmp/edited.fsm" >/dev/null 2>&1
[ $? -eq 1 ] || fail "different hash without --check must be refused"
# steps are matched by identity, not by spec line: a comment line on top moves
# every transition and changes nothing
{ echo '# x'; cat spec/agent.fsm; } >"$tmp/comment.fsm"
"$agentc" replay "$tmp/j" --check --spec "$tmp/comment.fsm" >"$tmp/d" 2>&1 \
  || fail "a comment line made the journal diverge: $(cat "$tmp/d")"
# a real edit (another target, another guard) diverges and prints both spec lines
sed 's/^    Created -> Idle    on spawn/    Created -> Paused  on spawn/' spec/agent.fsm >"$tmp/target.fsm"
"$agentc" replay "$tmp/j" --check --spec "$tmp/target.fsm" >"$tmp/d" 2>&1
[ $? -eq 1 ] || fail "a changed target should diverge"
line=$(grep -n '^    Created -> Idle ' spec/agent.fsm | cut -d: -f1)
grep -q "divergence at event 1 (spawn), step 1:" "$tmp/d" || fail "target divergence: $(cat "$tmp/d")"
grep -q "recorded: session Created --spawn / init_session--> Idle  (spec/agent.fsm:$line)" "$tmp/d" \
  || fail "recorded step and line: $(cat "$tmp/d")"
grep -q "replayed: session Created --spawn / init_session--> Paused  (.*target.fsm:$line)" "$tmp/d" \
  || fail "replayed step and line: $(cat "$tmp/d")"
{ echo; sed 's/\[turn_complete && answer_valid\]/[turn_complete \&\& answer_valid \&\& !needs_compaction]/' spec/agent.fsm; } >"$tmp/guard.fsm"
"$agentc" replay "$tmp/j" --check --spec "$tmp/guard.fsm" >"$tmp/d" 2>&1
[ $? -eq 1 ] || fail "a changed guard should diverge"
line=$(grep -n '\[turn_complete && answer_valid\]' spec/agent.fsm | cut -d: -f1)
grep -q "recorded: agent OBSERVING -- \[turn_complete && answer_valid\] / finish_answer--> COMPLETED  (spec/agent.fsm:$line)" "$tmp/d" \
  || fail "recorded guard step: $(cat "$tmp/d")"
grep -q "replayed: agent OBSERVING -- \[turn_complete && answer_valid && !needs_compaction\] / finish_answer--> COMPLETED  (.*guard.fsm:$((line + 1)))" "$tmp/d" \
  || fail "replayed guard step: $(cat "$tmp/d")"

# a journal of another spec replays against the spec its header names, when that file is there
sed 's/^param max_iterations .*/param max_iterations = 2/' spec/agent.fsm >"$tmp/budget.fsm"
"$agentc" run --no-store --journal "$tmp/b.journal" --spec "$tmp/budget.fsm" --provider script \
  --script "$tmp/hello.jsonl" hi >/dev/null 2>&1 || fail "run --spec budget.fsm"
(cd / && "$agentc" replay "$tmp/b.journal" --check) >"$tmp/r" 2>"$tmp/e" || fail "replay of budget: $(cat "$tmp/e")"
grep -q "the spec the journal names: .*budget.fsm" "$tmp/e" || fail "replay did not use budget.fsm: $(cat "$tmp/e")"
! grep -q "hash differs" "$tmp/e" || fail "replay against the built-in spec: $(cat "$tmp/e")"
"$agentc" replay "$tmp/j" --check >/dev/null 2>"$tmp/e" || fail "replay of the demo"
[ ! -s "$tmp/e" ] || fail "replay of a built-in spec's journal said: $(cat "$tmp/e")"

# --jsonl: one object per line, last one done
"$agentc" demo --jsonl --journal "$tmp/j2" >"$tmp/jl" 2>/dev/null || fail "demo --jsonl"
tail -n1 "$tmp/jl" | grep -q '"type":"done"' || fail "jsonl done line"
grep -q '"type":"tool_call"' "$tmp/jl" || fail "jsonl tool_call"
# comment-, whitespace- and reorder-only edits of the spec: no divergence
bash tests/cli/spec_edits.sh "$agentc" "$tmp/j" "$tmp/j2" >/dev/null || fail "spec edits"

# exit statuses
"$agentc" run >/dev/null 2>&1; [ $? -eq 2 ] || fail "run without prompt should exit 2"
"$agentc" run --bogus x >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad flag should exit 2"
env -u OPENAI_API_KEY -u OPENAI_BASE_URL "$agentc" run hi >/dev/null 2>"$tmp/e"; [ $? -eq 3 ] || fail "no key should exit 3"
grep -q "OPENAI_API_KEY" "$tmp/e" || fail "no-key message must name OPENAI_API_KEY"
grep -q "agentc demo" "$tmp/e" || fail "no-key message must mention agentc demo"
"$agentc" run --provider script --script /nonexistent hi >/dev/null 2>&1; [ $? -eq 3 ] || fail "missing script should exit 3"
printf '{"content":"ok"}\n' >"$tmp/s.jsonl"
"$agentc" run --provider script --script "$tmp/s.jsonl" --param nope=1 hi >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown param should exit 2"
"$agentc" run --provider script --script "$tmp/s.jsonl" --param max_retries=x hi >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad param type should exit 2"
out=$("$agentc" run --provider script --script "$tmp/s.jsonl" hi) || fail "script run"
[ "$out" = "ok" ] || fail "script answer: $out"
printf '{"error":{"status":401,"message":"bad key","retryable":false}}\n' >"$tmp/f.jsonl"
"$agentc" run --provider script --script "$tmp/f.jsonl" hi >/dev/null 2>&1; [ $? -eq 1 ] || fail "failed agent should exit 1"
# a retry after partial output: the consumer is told, the answer has no duplicate
printf '%s\n' '{"error":{"status":503,"message":"overloaded","retryable":true,"retry_after_ms":1,"partial":"Hel"}}' \
  '{"content":"Hello there"}' >"$tmp/p.jsonl"
"$agentc" run --jsonl --provider script --script "$tmp/p.jsonl" --param backoff_initial=1ms hi >"$tmp/pj" \
  || fail "partial-retry run"
grep -q '"type":"discarded"' "$tmp/pj" || fail "jsonl discarded line missing"
grep -q '"type":"retry"' "$tmp/pj" || fail "jsonl retry line missing"
tail -n1 "$tmp/pj" | grep -q '"answer":"Hello there"' || fail "answer after retry: $(tail -n1 "$tmp/pj")"
out=$("$agentc" run --provider script --script "$tmp/p.jsonl" --param backoff_initial=1ms hi 2>/dev/null) \
  || fail "partial-retry run (text)"
grep -q "discarded" <<<"$out" || fail "text mode must say the partial answer was discarded"
[ "$(echo "$out" | tail -n1)" = "Hello there" ] || fail "text answer after retry: $out"
echo "ok"
