#!/usr/bin/env bash
# `agentc coverage`: the transitions recorded sessions took, matched by identity (a comment,
# whitespace or a reorder changes no count; a journal from an older spec reports what the spec
# no longer has), several journals and stored sessions summed, --json, --fail-under, and the
# DOT diagram rendering with Graphviz.
agentc="$1"
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.." || exit 1
need jq
"$agentc" demo --journal "$tmp/j1" >/dev/null 2>&1 || fail "demo 1"
"$agentc" demo --journal "$tmp/j2" >/dev/null 2>&1 || fail "demo 2"

"$agentc" coverage spec/agent.fsm "$tmp/j1" >"$tmp/out" || fail "coverage: $(cat "$tmp/out")"
# the demo makes 3 model calls, 2 of them with tools, and never retries
grep -Eq '^ +3  process CALLING --llm.started / mark_streaming--> STREAMING' "$tmp/out" || fail "llm.started count: $(cat "$tmp/out")"
grep -Eq '^ +0  process RETRYING --timer.fired / begin_call--> CALLING' "$tmp/out" || fail "an untaken transition is listed"
grep -q '^states never entered: .*process.RETRYING' "$tmp/out" || fail "states never entered"
! grep -q '^states never entered: .*process.CALLING' "$tmp/out" || fail "CALLING was entered"
grep -Eq '^transitions: [0-9]+ of [0-9]+ taken \([0-9.]+%\)$' "$tmp/out" || fail "no summary"
grep -Eq '^  process: [0-9]+ of [0-9]+ taken' "$tmp/out" || fail "no per-machine summary"

# --json: the summary agrees with the transitions' counts; a TRANSITION has its shape
"$agentc" coverage spec/agent.fsm "$tmp/j1" --json >"$tmp/j.json" || fail "--json"
jq -e '.covered == ([.transitions[] | select(.count > 0)] | length) and .total == (.transitions | length)' \
  "$tmp/j.json" >/dev/null || fail "--json totals disagree"
jq -e '.transitions[0] | keys == ["actions","count","event","from","guard","kind","line","machine","to"]' \
  "$tmp/j.json" >/dev/null || fail "TRANSITION shape: $(jq -c '.transitions[0]' "$tmp/j.json")"
jq -e '[.transitions[] | select(.from == "STREAMING" and .event == "llm.completed")] | length == 2' \
  "$tmp/j.json" >/dev/null || fail "guarded rows are transitions of their own"

# two journals: the counts add up
"$agentc" coverage spec/agent.fsm "$tmp/j1" "$tmp/j2" --json >"$tmp/j12.json" || fail "two journals"
jq -e '[.transitions[] | select(.event == "llm.started")][0].count == 6' "$tmp/j12.json" >/dev/null \
  || fail "two journals do not add up"

# identity, not lines: a comment, blank lines, indentation and two rows swapped count the same
ident() { jq -c '[.transitions[] | del(.line)] | sort, .covered, .total' "$1"; }
{ echo '# moved'; echo; sed -e 's/^    TOOL_EXECUTING -> SUCCESS on tool.completed/        TOOL_EXECUTING -> SUCCESS on tool.completed/' spec/agent.fsm; } >"$tmp/moved.fsm"
awk '/^    CALLING -> STREAMING on llm.started/ { held = $0; next }
     /^    STREAMING on llm.delta/ && held { print; print held; held = ""; next } { print }' \
  "$tmp/moved.fsm" >"$tmp/reordered.fsm"
! cmp -s spec/agent.fsm "$tmp/reordered.fsm" || fail "the edit did nothing"
"$agentc" check "$tmp/reordered.fsm" 2>"$tmp/e" || fail "reordered spec: $(cat "$tmp/e")"
"$agentc" coverage "$tmp/reordered.fsm" "$tmp/j1" --json >"$tmp/r.json" || fail "coverage of the reordered spec"
[ "$(ident "$tmp/j.json")" = "$(ident "$tmp/r.json")" ] || fail "an edit of layout or order changed the coverage"

# a journal from an older spec: what it took that the spec no longer has is reported
sed -e 's|^    STREAMING on llm.delta / append_delta$|    STREAMING on llm.delta / append_delta, touch|' spec/agent.fsm >"$tmp/newer.fsm"
! cmp -s spec/agent.fsm "$tmp/newer.fsm" || fail "the edit did nothing"
"$agentc" coverage "$tmp/newer.fsm" "$tmp/j1" --json >"$tmp/n.json" || fail "coverage under a newer spec"
n_delta=$(jq '[.transitions[] | select(.event == "llm.started")][0].count' "$tmp/j.json")
jq -e '[.not_in_spec[] | select(.event == "llm.delta" and .actions == ["append_delta"] and .count > 0)] | length == 1' \
  "$tmp/n.json" >/dev/null || fail "the old llm.delta row is not reported: $(jq -c .not_in_spec "$tmp/n.json")"
jq -e '[.transitions[] | select(.event == "llm.delta")][0] | .count == 0 and .actions == ["append_delta","touch"]' \
  "$tmp/n.json" >/dev/null || fail "the new llm.delta row counted steps it never made"
[ "$n_delta" -gt 0 ] || fail "llm.started"
"$agentc" coverage "$tmp/newer.fsm" "$tmp/j1" >"$tmp/n.out" || fail "text under a newer spec"
grep -A1 '^taken but not in this spec' "$tmp/n.out" | grep -q 'process STREAMING --llm.delta / append_delta--> STREAMING' \
  || fail "text lacks the old row: $(cat "$tmp/n.out")"

# --fail-under: exit 1 below the figure, 0 at or above it; a bad figure is a usage error
pct=$(jq '.percent' "$tmp/j.json")
"$agentc" coverage spec/agent.fsm "$tmp/j1" --fail-under 99 >/dev/null 2>"$tmp/e"; [ $? -eq 1 ] || fail "--fail-under 99 passed at $pct%"
grep -q 'under 99%' "$tmp/e" || fail "--fail-under says nothing: $(cat "$tmp/e")"
"$agentc" coverage spec/agent.fsm "$tmp/j1" --fail-under 1 >/dev/null || fail "--fail-under 1 failed at $pct%"
"$agentc" coverage spec/agent.fsm "$tmp/j1" --fail-under abc >/dev/null 2>&1; [ $? -eq 2 ] || fail "--fail-under abc"
"$agentc" coverage spec/agent.fsm "$tmp/none" >/dev/null 2>"$tmp/e"; [ $? -eq 3 ] || fail "a missing journal"
grep -q 'none' "$tmp/e" || fail "the missing journal is not named"
"$agentc" coverage spec/agent.fsm >/dev/null 2>&1; [ $? -eq 2 ] || fail "no journal is a usage error"

# stored sessions: --db sums every session, --session picks
echo '{"content": "hello"}' >"$tmp/hello.jsonl"
for id in a b; do
  timeout 30 "$agentc" run --db "$tmp/s.db" --session "$id" --provider script --script "$tmp/hello.jsonl" hi \
    >/dev/null 2>"$tmp/e" </dev/null || fail "run $id: $(cat "$tmp/e")"
done
"$agentc" coverage spec/agent.fsm --db "$tmp/s.db" --json >"$tmp/db.json" || fail "--db"
jq -e '[.transitions[] | select(.event == "user_message" and .from == "Idle")][0].count == 2' "$tmp/db.json" \
  >/dev/null || fail "--db does not count both sessions"
"$agentc" coverage spec/agent.fsm --db "$tmp/s.db" --session a "$tmp/j1" --json >"$tmp/dbj.json" || fail "--db --session"
jq -e '[.transitions[] | select(.event == "user_message" and .from == "Idle")][0].count == 2' "$tmp/dbj.json" \
  >/dev/null || fail "a stored session and a journal do not add up"
"$agentc" coverage spec/agent.fsm --db "$tmp/s.db" --session nosuch >/dev/null 2>&1; [ $? -ne 0 ] || fail "an unknown session"

# the diagram: counts on edges, untaken ones dashed; renders with dot
"$agentc" coverage spec/agent.fsm "$tmp/j1" "$tmp/j2" --format dot >"$tmp/c.dot" || fail "--format dot"
grep -E '"process\.CALLING" -> "process\.STREAMING"' "$tmp/c.dot" | grep -q '(6x)' || fail "edge count"
grep -E '"process\.RETRYING" -> "process\.CALLING"' "$tmp/c.dot" | grep -q 'dashed' || fail "an untaken edge is not dashed"
if command -v dot >/dev/null; then
  dot -Tsvg "$tmp/c.dot" >/dev/null 2>"$tmp/e" || fail "the DOT output does not render: $(cat "$tmp/e")"
fi
"$agentc" coverage spec/agent.fsm "$tmp/j1" --format mermaid >"$tmp/c.mmd" || fail "--format mermaid"
head -n1 "$tmp/c.mmd" | grep -q '^stateDiagram-v2' || fail "not a Mermaid state diagram"
echo "ok"
