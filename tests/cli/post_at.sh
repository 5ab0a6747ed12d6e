#!/usr/bin/env bash
# `agentc run --post-at STATE=EVENT[:PAYLOAD]`: the event is posted once, when the session first
# enters the state, right after the event that entered it, and the run goes on until the session
# is at rest: a pause resumed, a message queued while a turn runs (both turns answered), an
# outside event at a state of the spec; an unknown state or event is a clear error.
agentc="$1"
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.." || exit 1
need jq
printf '%s\n' '{"content": "one"}' '{"content": "two"}' >"$tmp/s.jsonl"
run() { "$agentc" run --no-store --provider script --script "$tmp/s.jsonl" --journal "$tmp/$1.j" "${@:2}" >"$tmp/$1.out" 2>"$tmp/$1.err"; }
steps() { "$agentc" replay "$tmp/$1.j" --check >/dev/null 2>&1 || fail "$1: replay --check"; grep -o '"session","[A-Za-z]*","[A-Za-z_.]*","[A-Za-z]*"' "$tmp/$1.j" | tr '\n' ' '; }

run q --post-at Running=user_message:again hi || fail "queued: $(cat "$tmp/q.err")"
grep -q one "$tmp/q.out" && grep -q two "$tmp/q.out" || fail "queued: both turns answered: $(cat "$tmp/q.out")"
steps q | grep -q '"session","Running","user_message","Running" "session","Running","agent.COMPLETED","Running"' \
  || fail "queued: $(steps q)"

run p --post-at Running=pause --post-at session.Paused=resume hi || fail "pause, resume: $(cat "$tmp/p.err")"
steps p | grep -q '"session","Running","pause","Paused" "session","Paused","resume","Running"' || fail "pause: $(steps p)"

run a --spec examples/specs/approve_tools.fsm --post-at process.AWAITING_APPROVAL=deny hi || fail "deny: $(cat "$tmp/a.err")"
cp "$tmp/s.jsonl" "$tmp/s0.jsonl"
printf '%s\n' '{"tool_calls": [{"name": "calculator", "arguments": "{\"expression\": \"1+1\"}"}]}' '{"content": "done"}' >"$tmp/s.jsonl"
run d --spec examples/specs/approve_tools.fsm --tools builtin:calculator --post-at AWAITING_APPROVAL=deny hi || fail "deny: $(cat "$tmp/d.err")"
grep -q '"AWAITING_APPROVAL","deny","SUCCESS"' "$tmp/d.j" || fail "deny not applied: $(grep steps "$tmp/d.j" | tail -3)"
cp "$tmp/s0.jsonl" "$tmp/s.jsonl"

run c --post-at Idle=cancel hi; [ $? = 1 ] || fail "cancelled at spawn: exit $?"
grep -q '"Idle","cancel","Cancelled"' "$tmp/c.j" || fail "cancel at Idle"

run x --post-at Nowhere=pause hi; [ $? = 2 ] || fail "unknown state accepted"
grep -q "no state 'Nowhere'" "$tmp/x.err" || fail "unknown state: $(cat "$tmp/x.err")"
run x --post-at Running=paws hi; [ $? = 2 ] || fail "unknown event accepted"
grep -q "declares no event 'paws'" "$tmp/x.err" || fail "unknown event: $(cat "$tmp/x.err")"
run x --post-at Completed=ping hi; [ $? = 2 ] || fail "a terminal state accepted"
sed 's/\bIDLE\b/Idle/g' spec/agent.fsm >"$tmp/two_idle.fsm" # Idle in session and process
run x --spec "$tmp/two_idle.fsm" --post-at Idle=ping hi; [ $? = 2 ] || fail "an ambiguous state accepted"
grep -q "more than one state 'Idle'" "$tmp/x.err" || fail "ambiguous: $(cat "$tmp/x.err")"
run y --spec "$tmp/two_idle.fsm" --post-at session.Idle=ping hi || fail "a qualified state: $(cat "$tmp/y.err")"
grep -q '"Idle","ping","Idle"' "$tmp/y.j" || fail "ping at session.Idle"
run x --post-at Running hi; [ $? = 2 ] || fail "no event accepted"
"$agentc" run --help | grep -q -- '--post-at STATE=EVENT' || fail "--post-at is not in run --help"
echo ok
