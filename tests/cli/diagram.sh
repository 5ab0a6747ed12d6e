#!/usr/bin/env bash
# `agentc diagram --journal`: a session's path drawn on the spec, with visit
# counts, unvisited parts greyed, in DOT and Mermaid; --format svg renders.
agentc="$1"
. "$(dirname "$0")/lib.sh"
"$agentc" demo --journal "$tmp/j" >/dev/null 2>&1 || fail "demo"

"$agentc" diagram spec/agent.fsm --journal "$tmp/j" --format dot >"$tmp/d.dot" || fail "dot"
grep -q '^digraph' "$tmp/d.dot" || fail "not a DOT graph"
# the demo makes 3 LLM calls, 2 of them with tools, and never retries or fails
grep -Eq '"process\.CALLING" \[label="CALLING \(3x\)' "$tmp/d.dot" || fail "CALLING count"
grep -Eq '"process\.TOOL_EXECUTING" \[label="TOOL_EXECUTING \(2x\)' "$tmp/d.dot" || fail "TOOL_EXECUTING count"
grep -Eq '"process\.RETRYING" \[label="RETRYING \(0x\).*color=gray' "$tmp/d.dot" || fail "RETRYING not greyed"
grep -Eq '"agent\.FAILED" \[label="FAILED \(0x\).*color=gray' "$tmp/d.dot" || fail "FAILED not greyed"
grep -Eq '"process\.CALLING" -> "process\.RETRYING" .*color=gray' "$tmp/d.dot" || fail "unvisited edge not greyed"
grep -E '"process\.CALLING" -> "process\.STREAMING"' "$tmp/d.dot" | grep -q '(3x)' || fail "edge count"
! grep -E '"process\.CALLING" -> "process\.STREAMING"' "$tmp/d.dot" | grep -q 'gray' || fail "visited edge greyed"
if command -v dot >/dev/null; then
  dot -Tsvg "$tmp/d.dot" >/dev/null 2>"$tmp/e" || fail "the DOT output does not render: $(cat "$tmp/e")"
fi

"$agentc" diagram spec/agent.fsm --journal "$tmp/j" --format mermaid >"$tmp/d.mmd" || fail "mermaid"
head -n1 "$tmp/d.mmd" | grep -q '^stateDiagram-v2' || fail "not a Mermaid state diagram"
grep -q 'state "CALLING (3x)" as process_CALLING' "$tmp/d.mmd" || fail "Mermaid CALLING count"
grep -q 'process_IDLE --> process_CALLING : (eventless) / begin_call (3x)' "$tmp/d.mmd" || fail "Mermaid edge count"
grep -q '^ *classDef unvisited' "$tmp/d.mmd" || fail "no unvisited class"
grep -q '^ *class process_RETRYING unvisited' "$tmp/d.mmd" || fail "RETRYING not greyed in Mermaid"
! grep -q '^ *class process_CALLING unvisited' "$tmp/d.mmd" || fail "CALLING greyed in Mermaid"

if command -v dot >/dev/null; then
  "$agentc" diagram spec/agent.fsm --journal "$tmp/j" --format svg >"$tmp/d.svg" || fail "svg"
  grep -q '<svg' "$tmp/d.svg" || fail "no SVG output"
  grep -q 'CALLING (3x)' "$tmp/d.svg" || fail "SVG lacks the counts"
fi
# steps are matched to transitions by identity, not by line: comment lines on
# top of the spec draw the same counts
{ echo '# moved'; echo; cat spec/agent.fsm; } >"$tmp/moved.fsm"
"$agentc" diagram "$tmp/moved.fsm" --journal "$tmp/j" --format mermaid >"$tmp/moved.mmd" || fail "moved mermaid"
cmp -s "$tmp/d.mmd" "$tmp/moved.mmd" || fail "a comment line changed the coverage: $(diff "$tmp/d.mmd" "$tmp/moved.mmd" | head)"

# several journals: the counts are their sums
"$agentc" demo --journal "$tmp/j2" >/dev/null 2>&1 || fail "demo 2"
"$agentc" diagram spec/agent.fsm --journal "$tmp/j" --journal "$tmp/j2" --format dot >"$tmp/d2.dot" || fail "two journals"
grep -Eq '"process\.CALLING" \[label="CALLING \(6x\)' "$tmp/d2.dot" || fail "two journals: CALLING count"
grep -E '"process\.CALLING" -> "process\.STREAMING"' "$tmp/d2.dot" | grep -q '(6x)' || fail "two journals: edge count"
grep -E '"process\.CALLING" -> "process\.RETRYING"' "$tmp/d2.dot" | grep -q 'style=dashed' || fail "untaken edge not dashed"
"$agentc" diagram spec/agent.fsm --journal "$tmp/j" --journal "$tmp/nonexistent" --format dot >/dev/null 2>&1
[ $? -eq 3 ] || fail "a missing second journal must fail"

# self-loops are listed inside their state (Graphviz piles their labels on one another): no two
# edge labels' boxes intersect once dot has laid out the shipped spec and the gallery, each
# machine alone and all together, with and without a session's counts
"$agentc" diagram spec/agent.fsm --format dot --machine session >"$tmp/s.dot" || fail "session machine"
grep -zq '"session.Running" \[label="Running[^"]*on rollback \[has_queued_message\] / rollback_turn, take_queued_message (re-enters)' "$tmp/s.dot" \
  || fail "a self-loop is not listed in its state: $(grep '"session.Running" \[' "$tmp/s.dot")"
! grep -Eq '"session\.Running" -> "session\.Running"' "$tmp/s.dot" || fail "a self-loop is drawn as an edge"
if command -v dot >/dev/null && command -v jq >/dev/null; then
  for f in spec/agent.fsm examples/specs/*.fsm examples/embed/approval.fsm; do
    for m in "" $(sed -n 's/^machine \([A-Za-z_][A-Za-z_0-9]*\).*/\1/p' "$f"); do
      for j in "" "$tmp/j"; do
        [ -n "$j" ] && [ "$f" != spec/agent.fsm ] && continue
        "$agentc" diagram "$f" --format dot ${m:+--machine "$m"} ${j:+--journal "$j"} >"$tmp/o.dot" || fail "$f $m"
        dot -Tjson "$tmp/o.dot" >"$tmp/o.json" 2>"$tmp/e" || fail "$f $m does not render: $(cat "$tmp/e")"
        jq -e '[.edges[]? | select(._ldraw_ != null)] | length > 0' "$tmp/o.json" >/dev/null || fail "$f $m: no labels measured"
        jq -r -f tests/cli/label_boxes.jq "$tmp/o.json" >"$tmp/overlaps" || fail "label_boxes.jq"
        [ ! -s "$tmp/overlaps" ] || fail "$f ${m:-(all)} ${j:+(counts)}: edge labels overlap: $(cat "$tmp/overlaps")"
      done
    done
  done
fi

"$agentc" diagram spec/agent.fsm --journal "$tmp/nonexistent" --format dot >/dev/null 2>&1
[ $? -ne 0 ] || fail "a missing journal must fail"
echo "ok"
