#!/usr/bin/env bash
# decisions.sh AGENTC: `agentc run --spec examples/specs/approve_tools.fsm` on a pseudo-terminal
# asks per tool call: one approved, one denied with a reason, one edited (an edit the tool's
# schema refuses is refused with the reason and asked again); the results say what was decided
# and the journal replays with --check. "all" approves the call and the rest; --on still
# decides for all the calls at once. Run from the source root.
agentc="$1"
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.." || exit 1
need script
need jq
calc() { printf '{"id": "%s", "name": "calculator", "arguments": "{\\"expression\\": \\"%s\\"}"}' "$1" "$2"; }
printf '{"content": "", "tool_calls": [%s, %s, %s]}\n{"content": "done"}\n' "$(calc c1 1+1)" \
  "$(calc c2 2+2)" "$(calc c3 3+3)" >"$tmp/three.jsonl"

# on_pty NAME INPUT: the run on a pty fed INPUT (lines end with \r, as typed); its screen in
# $tmp/NAME.out, its journal in $tmp/NAME.journal
on_pty() {
  printf '%q ' "$agentc" run --spec examples/specs/approve_tools.fsm --provider script \
    --script "$tmp/three.jsonl" --tools builtin:calculator --journal "$tmp/$1.journal" sums >"$tmp/$1.sh"
  { printf '%b' "$2"; sleep 3; } | NO_COLOR=1 SHELL=/bin/sh timeout 20 script -qec "sh $tmp/$1.sh" /dev/null \
    >"$tmp/$1.out" 2>&1 || fail "$1 on a pty: $(cat "$tmp/$1.out")"
}
# result NAME ID: the result journaled for call ID
result() { jq -r --arg id "$2" 'select(.ev == "tool.completed" and .data.id == $id) | .data.content' "$tmp/$1.journal"; }
replays() {
  "$agentc" replay "$tmp/$1.journal" --check --spec examples/specs/approve_tools.fsm >"$tmp/$1.check" 2>&1 \
    && grep -q "every transition matches" "$tmp/$1.check" || fail "$1: replay --check: $(cat "$tmp/$1.check")"
}

on_pty each 'approve\rmaybe\rdeny\rnot needed\redit\r{"expression": 7}\r{"expression": "6*7"}\r'
grep -q 'tool call 1 of 3 (c1): calculator {"expression": "1+1"}' "$tmp/each.out" \
  || fail "the calls are not shown one by one: $(cat "$tmp/each.out")"
grep -q "'maybe' is not one of them" "$tmp/each.out" || fail "a wrong answer not refused: $(cat "$tmp/each.out")"
grep -q "refused: call 'c3': the edited arguments do not fit the schema of calculator" "$tmp/each.out" \
  || fail "an invalid edit was not refused: $(cat "$tmp/each.out")"
grep -q "^done" "$tmp/each.out" || fail "no answer: $(cat "$tmp/each.out")"
grep -q -- '-> calculator {"expression":"6\*7"}' "$tmp/each.out" && ! grep -q -- '-> calculator {"expression": "3+3"}' "$tmp/each.out" \
  || fail "the edited call does not start with the edited arguments: $(cat "$tmp/each.out")"
[ "$(grep -c '"ev":"approve"' "$tmp/each.journal")" = 1 ] || fail "the invalid edit was posted"
[ "$(result each c1)" = 2 ] || fail "approved: $(result each c1)"
grep '"ev":"approve"' "$tmp/each.journal" | jq -e '.data.calls.c2 == {"deny": "not needed"}' >/dev/null \
  || fail "the denial is not journaled: $(grep '"ev":"approve"' "$tmp/each.journal")"
[ -z "$(result each c2)" ] || fail "the denied call ran: $(result each c2)"
[ "$(result each c3)" = "$(printf 'arguments edited by the user: {"expression":"6*7"}\n42')" ] \
  || fail "edited: $(result each c3)"
replays each

on_pty all 'deny\r\rall\r'
[ "$(result all c2)" = 4 ] && [ "$(result all c3)" = 6 ] || fail "all: $(cat "$tmp/all.out")"
grep '"ev":"approve"' "$tmp/all.journal" | jq -e '.data.calls == {"c1": {"deny": ""}, "c2": "approve"}' >/dev/null \
  || fail "all: $(grep '"ev":"approve"' "$tmp/all.journal")"
grep -q "tool call 3 of 3" "$tmp/all.out" && fail "all: the third call was asked: $(cat "$tmp/all.out")"
replays all

# --on decides for every call at once, as before
"$agentc" run --spec examples/specs/approve_tools.fsm --provider script --script "$tmp/three.jsonl" \
  --tools builtin:calculator --journal "$tmp/on.journal" --on AWAITING_APPROVAL=approve sums \
  >"$tmp/on.out" 2>&1 </dev/null || fail "--on: $(cat "$tmp/on.out")"
[ "$(result on c1)/$(result on c2)/$(result on c3)" = 2/4/6 ] || fail "--on: $(cat "$tmp/on.out")"
echo "decisions: all checks passed"
