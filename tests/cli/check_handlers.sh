#!/usr/bin/env bash
# agentc check against the built-in handlers, by default: a spec it passes is one
# `agentc run --spec` runs, and one it refuses run refuses too (every gallery, example and test
# spec); a handler the program lacks is located at its declaration; run_tools with no
# record_assistant on the way in is refused at the effect; the stuck-state proof counts what
# the built-in effects post (their contracts), so a spec that declares no `posts` is proved by
# `check` and refused by `check --handlers none`; a state LIMBO reachable from OBSERVING and
# left only on an event nothing there posts is refused by both, at its line.
agentc="$1"
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.." || exit 1
echo '{"content": "hello"}' >"$tmp/hello.jsonl"
runs() { # runs SPEC: rc of a one-turn run, its stderr in $tmp/run.err
  timeout 30 "$agentc" run --no-store --spec "$1" --provider script --script "$tmp/hello.jsonl" \
    hi >/dev/null 2>"$tmp/run.err" </dev/null
}

# ---- check passes <=> run binds the spec ----------------------------------------------------
for f in spec/agent.fsm examples/specs/*.fsm examples/embed/approval.fsm tests/spec/valid/*.fsm \
  tests/gen/golden/*.fsm; do
  runs "$f"
  rrc=$?
  if "$agentc" check "$f" 2>"$tmp/check.err"; then
    [ $rrc != 3 ] && ! grep -q "lacks\|does not give the built-in handlers" "$tmp/run.err" \
      || fail "$f: check passes, run refuses: $(cat "$tmp/run.err")"
  else
    [ $rrc = 3 ] || fail "$f: check refuses, run exits $rrc: $(cat "$tmp/check.err")"
    "$agentc" check --handlers none "$f" 2>/dev/null || fail "$f: refused with --handlers none too"
  fi
done
"$agentc" check --handlers none examples/embed/approval.fsm 2>/dev/null \
  || fail "approval.fsm: --handlers none refuses the embedding example"

# ---- a handler the program lacks: at its declaration -----------------------------------------
sed -e 's/^action record_assistant, /action my_custom_action\n&/' \
  -e 's|^    Idle    -> Running on user_message / append_user_message$|&, my_custom_action|' \
  spec/agent.fsm >"$tmp/custom.fsm"
grep -q 'append_user_message, my_custom_action$' "$tmp/custom.fsm" || fail "the custom edit did not take"
"$agentc" check "$tmp/custom.fsm" 2>"$tmp/err" && fail "check accepted a handler this program lacks"
line=$(grep -n '^action my_custom_action' "$tmp/custom.fsm" | cut -d: -f1)
grep -q "custom.fsm:$line:8: error: action my_custom_action: this program has no handler of that name" \
  "$tmp/err" || fail "custom action: $(cat "$tmp/err")"
"$agentc" check --handlers none "$tmp/custom.fsm" 2>/dev/null || fail "--handlers none refused it"
runs "$tmp/custom.fsm" && fail "run accepted it"
grep -q "lacks: action my_custom_action" "$tmp/run.err" || fail "run: $(cat "$tmp/run.err")"
"$agentc" check --handlers bogus "$tmp/custom.fsm" 2>"$tmp/err"
[ $? = 2 ] && grep -q "takes 'builtin'.* or 'none'" "$tmp/err" || fail "--handlers bogus: $(cat "$tmp/err")"

# ---- run_tools needs the calls recorded: record_assistant on every way in ----------------------
sed 's|^\(    STREAMING -> AWAITING_APPROVAL on llm.completed \[has_tool_calls\]\) / record_assistant$|\1|' \
  examples/specs/approve_tools.fsm >"$tmp/norecord.fsm"
cmp -s "$tmp/norecord.fsm" examples/specs/approve_tools.fsm && fail "the record_assistant edit did not take"
"$agentc" check --handlers none "$tmp/norecord.fsm" 2>/dev/null || fail "norecord is well-formed on its own"
"$agentc" check "$tmp/norecord.fsm" 2>"$tmp/err" && fail "check accepted run_tools with nothing recorded"
line=$(grep -n 'state TOOL_EXECUTING *{ effect run_tools' "$tmp/norecord.fsm" | cut -d: -f1)
col=$(grep 'state TOOL_EXECUTING *{ effect run_tools' "$tmp/norecord.fsm" | awk '{print index($0, "run_tools")}')
way=$(grep -n '^    AWAITING_APPROVAL -> TOOL_EXECUTING on approve' "$tmp/norecord.fsm" | cut -d: -f1)
grep -q "norecord.fsm:$line:$col: error: effect run_tools in state TOOL_EXECUTING needs the calls recorded by record_assistant on every way in: the way in at line $way (AWAITING_APPROVAL -> TOOL_EXECUTING on approve) comes without it" \
  "$tmp/err" || fail "norecord: $(cat "$tmp/err")"
grep -q "add record_assistant to the transition" "$tmp/err" || fail "norecord: no hint: $(cat "$tmp/err")"
runs "$tmp/norecord.fsm" && fail "run accepted run_tools with nothing recorded"
grep -q "needs the calls recorded by record_assistant" "$tmp/run.err" || fail "run: $(cat "$tmp/run.err")"

# ---- the built-in contracts' posts feed the proof ---------------------------------------------
sed -e '/^effect [a-z_]* posts /d' spec/agent.fsm >"$tmp/noposts.fsm"
grep -q '^effect .* posts ' "$tmp/noposts.fsm" && fail "the posts edit did not take"
"$agentc" check "$tmp/noposts.fsm" 2>"$tmp/err" || fail "noposts refused with the built-in handlers: $(cat "$tmp/err")"
"$agentc" check --handlers none "$tmp/noposts.fsm" 2>"$tmp/err" && fail "--handlers none proved effects that post nothing"
grep -q "error: state 'CALLING' can never be left: it waits for llm.started (which nothing sends)" "$tmp/err" \
  && grep -q "error: nothing sends event 'llm.started': .*declare it 'outside event llm.started'" "$tmp/err" \
  || fail "noposts with --handlers none: $(cat "$tmp/err")"
runs "$tmp/noposts.fsm" || fail "run refused noposts: $(cat "$tmp/run.err")"

# ---- LIMBO: reachable from OBSERVING, left only on what nothing there posts -------------------
for spec in spec/agent.fsm "$tmp/noposts.fsm"; do
  sed -e 's/^    state PLANNING, OBSERVING$/    state PLANNING, OBSERVING\n    state LIMBO/' \
    -e 's/^    OBSERVING -> PLANNING$/    OBSERVING -> LIMBO [turn.iterations > 5]\n&\n    LIMBO -> PLANNING on tool.completed/' \
    "$spec" >"$tmp/limbo.fsm"
  grep -q 'LIMBO -> PLANNING on tool.completed' "$tmp/limbo.fsm" || fail "the LIMBO edit did not take"
  line=$(grep -n '^    state LIMBO$' "$tmp/limbo.fsm" | cut -d: -f1)
  for h in builtin none; do
    [ $h = none ] && [ "$spec" != spec/agent.fsm ] && continue
    "$agentc" check --handlers $h "$tmp/limbo.fsm" 2>"$tmp/err" && fail "LIMBO accepted ($spec, $h)"
    grep -q "limbo.fsm:$line:11: error: state 'LIMBO' can never be left: it waits for tool.completed (posted by run_tools), and nothing active there posts it" \
      "$tmp/err" || fail "LIMBO ($spec, $h): $(cat "$tmp/err")"
  done
  runs "$tmp/limbo.fsm" && fail "run accepted LIMBO"
  grep -q "state 'LIMBO' can never be left" "$tmp/run.err" || fail "run LIMBO: $(cat "$tmp/run.err")"
done
echo ok
