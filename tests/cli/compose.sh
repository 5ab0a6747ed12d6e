#!/usr/bin/env bash
# Sub-agents as tools (docs/composition.md), with the real binary against the loopback model
# server: a supervisor calling two sub-agents of other specs and tool files at once, their
# events in --jsonl, their journals linked and replayed as a tree, the store's parent and
# children, recursion past max_depth, a cancel and a kill -9 in the middle of a child.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$-secret"
net=(--provider openai --base-url "$base" --model "model-$$" --api-key-env AGENTC_TEST_KEY)
spec="$PWD/examples/specs/tool_budget.fsm"
mkdir -p "$tmp/ext"
cat >"$tmp/ext/tools.json" <<JSON
{"tools": [{"name": "calculator", "description": "Evaluates arithmetic (external)",
            "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
            "command": ["sh", "-c", "cat >/dev/null; printf 4242"]}]}
JSON
cat >"$tmp/sup.json" <<JSON
{"agents": [
  {"name": "math", "description": "Does arithmetic exactly", "spec": "$spec",
   "tools": ["builtin:calculator"], "system": "You are math."},
  {"name": "ext", "description": "Asks the external calculator", "tools": ["ext/tools.json"],
   "system": "You are ext."},
  {"name": "deep", "description": "Asks itself again", "max_depth": 2},
  {"name": "tight", "description": "Arithmetic on no budget", "spec": "$spec",
   "tools": ["builtin:calculator"], "params": {"max_tool_calls": 0}}]}
JSON
cat >"$tmp/slow.json" <<JSON
{"tools": [{"name": "sleeper", "description": "Sleeps", "parameters": {"type": "object"},
            "command": ["sh", "-c", "echo \$\$ >'$tmp/sleeper.pid'; sleep 30; echo slept"]}],
 "agents": [{"name": "slow", "description": "A slow agent", "tools": ["slow.json"]}]}
JSON
ask="DELEGATE[math:What is 6 * 7?|ext:What is 2 + 3?]"
answer="The answer is The answer is 42.; The answer is 4242.."

# ---- two sub-agents at once: answers, nested events, linked journals, replay of the tree ----
"$agentc" run "${net[@]}" --tools "$tmp/sup.json" --jsonl --trace --journal "$tmp/j.jsonl" "$ask" \
  >"$tmp/jl" 2>"$tmp/err" || fail "supervisor run: $(cat "$tmp/err")"
every_line_json "$tmp/jl"
[ "$(tail -n1 "$tmp/jl" | jq -r .answer)" = "$answer" ] || fail "answer: $(tail -n1 "$tmp/jl")"
for a in math ext; do
  for t in tool_call tool_result text state; do
    has_line "$tmp/jl" ".agent == \"$a\" and .type == \"$t\"" || fail "jsonl: no $t line of $a"
  done
done
has_line "$tmp/jl" '.agent == "math" and .type == "tool_result" and .content == "42"' || fail "math's result"
has_line "$tmp/jl" '.agent == "ext" and .type == "tool_result" and .content == "4242"' || fail "ext's result"
has_line "$tmp/jl" '(.agent | not) and .type == "tool_result" and .content == "The answer is 42."' \
  || fail "the parent's call result"
# each child ran under its own agent: its system prompt and tools, and its own spec
math_req=$(jq -c 'select(.body.messages[0].content == "You are math.")' "$tmp/requests" | head -n1)
[ -n "$math_req" ] || fail "no request of math"
[ "$(jq -c '[.body.tools[].function.name]' <<<"$math_req")" = '["calculator"]' ] || fail "math's tools"
[ "$(jq -r '.body.messages[1].content' <<<"$math_req")" = "What is 6 * 7?" ] || fail "math's task"
has_line "$tmp/requests" '.body.messages[0].content == "You are ext."' || fail "no request of ext"
sup_req=$(jq -c 'select(.body.messages[0].role == "user")' "$tmp/requests" | head -n1)
[ "$(jq -c '[.body.tools[].function.name] | sort' <<<"$sup_req")" = '["agent__deep","agent__ext","agent__math","agent__tight"]' ] \
  || fail "the supervisor's tools: $(jq -c '[.body.tools[].function.name]' <<<"$sup_req")"
# journals: the parent records both starts before either end (they ran at once), the children
# theirs beside it, each naming its parent call
evs=$(jq -r 'select(.ev) | .ev' "$tmp/j.jsonl" | grep '^agent\.' | tr '\n' ' ')
[ "$evs" = "agent.started agent.started agent.done agent.done " ] || fail "parent's records: $evs"
for c in $(jq -r 'select(.ev == "agent.started") | .data.journal' "$tmp/j.jsonl"); do
  [ -s "$tmp/$c" ] || fail "child journal $c missing"
  has_line "$tmp/$c" '.ev == "spawn" and .data.parent.session == "s1" and (.data.parent.call | length > 0)' \
    || fail "$c: spawn names no parent"
done
head -n1 "$tmp"/j.math.*.jsonl | jq -e '.spec | endswith("tool_budget.fsm")' >/dev/null || fail "math's spec"
"$agentc" replay "$tmp/j.jsonl" --check >"$tmp/r" 2>&1 || fail "replay of the tree: $(cat "$tmp/r")"
grep -q "check: 2 child sessions of .* match the recording" "$tmp/r" || fail "tree check: $(cat "$tmp/r")"
[ "$(grep -c 'every transition matches' "$tmp/r")" -eq 3 ] || fail "three journals checked"
! grep -rq "$AGENTC_TEST_KEY" "$tmp"/j*.jsonl || fail "API key in a journal"

# ---- an entry that names an agent of the agents file runs that agent -------------------------
cat >"$tmp/byname.json" <<'JSON'
{"agents": [{"name": "mathfile", "description": "The agents file's math agent"}]}
JSON
cat >"$tmp/agents.json" <<JSON
{"agents": [{"name": "top", "provider": "openai", "base_url": "$base", "model": "model-$$",
             "api_key_env": "AGENTC_TEST_KEY", "tools": ["byname.json"], "system": "You are top."},
            {"name": "mathfile", "provider": "openai", "base_url": "$base", "model": "model-$$",
             "api_key_env": "AGENTC_TEST_KEY", "tools": ["ext/tools.json"],
             "system": "You are mathfile."}]}
JSON
: >"$tmp/requests"
"$agentc" run --no-store --agents "$tmp/agents.json" --agent top "DELEGATE[mathfile:What is 1 + 2?]" \
  >"$tmp/out" 2>&1 || fail "agents file run: $(cat "$tmp/out")"
grep -qx "The answer is The answer is 4242.." "$tmp/out" || fail "by-name answer: $(cat "$tmp/out")"
has_line "$tmp/requests" '.body.messages[0].content == "You are mathfile." and ([.body.tools[].function.name] == ["calculator"])' \
  || fail "the agents file's agent did not run"

# ---- stored: the parent lists its children, each child its parent ----------------------------
db=(--db "$tmp/s.db")
"$agentc" run "${db[@]}" --session sup "${net[@]}" --tools "$tmp/sup.json" "$ask" >"$tmp/out" 2>"$tmp/err" \
  || fail "stored run: $(cat "$tmp/err")"
grep -qxF "$answer" "$tmp/out" || fail "stored answer: $(cat "$tmp/out")"
grep -qx -- '-> \[math\] calculator {"expression":"6 \* 7"}' "$tmp/out" || fail "a child's call line: $(cat "$tmp/out")"
grep -Eq -- '^<- \[ext\] calculator ok \([0-9]+ ms\): 4242$' "$tmp/out" || fail "a child's result line"
"$agentc" sessions show sup "${db[@]}" --json >"$tmp/show" || fail "sessions show"
[ "$(jq -c '[.children[] | .agent + ":" + .outcome] | sort' "$tmp/show")" = '["ext:completed","math:completed"]' ] \
  || fail "children: $(jq -c .children "$tmp/show")"
child=$(jq -r '.children[] | select(.agent == "math") | .session' "$tmp/show")
"$agentc" sessions show "$child" "${db[@]}" >"$tmp/show" || fail "sessions show child"
grep -q "^parent   sup (call .*, agent math)" "$tmp/show" || fail "child's parent line: $(head "$tmp/show")"
"$agentc" sessions show sup "${db[@]}" | grep -q "^child    $child (agent math" || fail "parent's child line"

# ---- a child whose spec fails the turn: the call fails with the spec's reason ------------------
"$agentc" run "${net[@]}" --tools "$tmp/sup.json" --jsonl "DELEGATE[tight:What is 1 + 1?]" >"$tmp/jl" 2>&1 \
  || fail "tight run: $(cat "$tmp/jl")"
has_line "$tmp/jl" '(.agent | not) and .type == "tool_result" and .ok == false and .content ==
  "agent tight failed: the turn would exceed its tool-call budget (max_tool_calls = 0)"' \
  || fail "the child's failure: $(grep tool_result "$tmp/jl")"

# ---- recursion stops at max_depth with a clear error -----------------------------------------
n0=$(wc -l <"$tmp/requests")
"$agentc" run "${net[@]}" --tools "$tmp/sup.json" "DELEGATE[deep:*]" >"$tmp/out" 2>&1 || fail "deep run"
grep -q "not run: agent::deep would run at level 3 of sub-agents (deep/deep/deep), past its max_depth 2" \
  "$tmp/out" || fail "max_depth error: $(cat "$tmp/out")"
[ $(($(wc -l <"$tmp/requests") - n0)) -eq 6 ] || fail "three levels of two model calls each"
"$agentc" run "${net[@]}" --tools "$tmp/sup.json" --jsonl "DELEGATE[deep:*]" >"$tmp/jl" 2>&1 || fail "deep --jsonl"
has_line "$tmp/jl" '.agent == "deep/deep" and .type == "tool_result" and .ok == false' || fail "level 2's path"
has_line "$tmp/jl" '.agent == "deep" and .type == "tool_result" and .ok == true' || fail "level 1's path"
"$agentc" check --tools "$tmp/sup.json" | grep -q "ok: 0 tools, 0 toolkits, 4 agents" || fail "check --tools"

# ---- batch: a child session is not an item of the batch ------------------------------------
printf '%s\n' '{"id": "b1", "prompt": "DELEGATE[deep:What is 2 * 21?]"}' \
  '{"id": "b2", "prompt": "DELEGATE[deep:What is 3 * 3?]"}' >"$tmp/batch.jsonl"
"$agentc" batch "$tmp/batch.jsonl" --no-store --concurrency 2 --ordered "${net[@]}" --tools builtin:calculator \
  --tools "$tmp/sup.json" >"$tmp/out" 2>"$tmp/err" || fail "batch: $(cat "$tmp/err")"
[ "$(jq -r '.id + " " + .answer' "$tmp/out" | tr '\n' '|')" = "b1 The answer is The answer is 42..|b2 The answer is The answer is 9..|" ] \
  || fail "batch answers: $(cat "$tmp/out")"

# ---- a stop signal mid-child: the child's turn is cancelled, its tool process gone ------------
rm -f "$tmp/sleeper.pid"
"$agentc" run --db "$tmp/c.db" --session c1 "${net[@]}" --tools "$tmp/slow.json" "DELEGATE[slow:TOOLSLEEP]" \
  >"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do [ -s "$tmp/sleeper.pid" ] && break; sleep 0.05; done
[ -s "$tmp/sleeper.pid" ] || fail "the child's tool did not start"
kill -INT $pid
wait $pid
[ $? -eq 130 ] || fail "interrupted run exit: $(cat "$tmp/out")"
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_for gone "$(cat "$tmp/sleeper.pid")" || fail "the child's tool process outlived the cancel"
"$agentc" sessions show c1 --db "$tmp/c.db" --json >"$tmp/show"
child=$(jq -r '.children[0].session' "$tmp/show")
[ "$(jq -r .session.last_turn.outcome "$tmp/show")" = cancelled ] || fail "parent's turn not cancelled"
"$agentc" sessions show "$child" --db "$tmp/c.db" --json | jq -e '.session.last_turn.outcome == "cancelled"' \
  >/dev/null || fail "child's turn not cancelled"
# the parent's journal answers the call's agent.started with an agent.done
"$agentc" sessions export c1 --db "$tmp/c.db" >"$tmp/c1.journal" 2>/dev/null || fail "no journal of c1"
grep '"ev":"agent.done"' "$tmp/c1.journal" | grep -q '"outcome":"cancelled"' \
  || fail "the stopped call records no agent.done: $(grep agent "$tmp/c1.journal")"
"$agentc" replay "$tmp/c1.journal" --check >"$tmp/c1.check" 2>&1 \
  || fail "the journal with the stopped call does not replay: $(tail -3 "$tmp/c1.check")"

# ---- kill -9 mid-child, then resume: the parent's call opens the same child, which goes on ----
rm -f "$tmp/sleeper.pid"
"$agentc" run --db "$tmp/k.db" --session k1 "${net[@]}" --tools "$tmp/slow.json" "DELEGATE[slow:TOOLSLEEP]" \
  >"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do [ -s "$tmp/sleeper.pid" ] && break; sleep 0.05; done
[ -s "$tmp/sleeper.pid" ] || fail "the child's tool did not start (kill)"
kill -9 $pid
wait $pid 2>/dev/null
kill "$(cat "$tmp/sleeper.pid")" 2>/dev/null # SIGKILL leaves the tool's group to its own end
[ "$("$agentc" sessions list --db "$tmp/k.db" | grep -c ' running .*stopped')" -eq 2 ] || fail "both stopped mid-turn"
"$agentc" resume k1 --db "$tmp/k.db" "${net[@]}" --tools "$tmp/slow.json" >"$tmp/out" 2>&1 || fail "resume: $(cat "$tmp/out")"
grep -qx "The answer is The answer is Error: interrupted: the tool may or may not have completed.." "$tmp/out" \
  || fail "resumed answer: $(cat "$tmp/out")"
[ "$("$agentc" sessions list --db "$tmp/k.db" | grep -c ' idle .*at rest')" -eq 2 ] || fail "both at rest"
"$agentc" sessions list --db "$tmp/k.db" | grep -c "^k1" | grep -qx 2 || fail "one child only (the same one)"

# ---- handoffs there and back across turns: the conversation each model call sees -------------
cat >"$tmp/a.json" <<'JSON'
{"agents": [{"name": "b", "description": "Hands the conversation to b", "handoff": true,
             "system": "You are b.", "tools": ["b.json"]}]}
JSON
cat >"$tmp/b.json" <<'JSON'
{"agents": [{"name": "a", "description": "Hands the conversation to a", "handoff": true,
             "system": "You are a.", "tools": ["a.json"]}]}
JSON
hdb=(--db "$tmp/h.db" --session h1)
: >"$tmp/requests"
"$agentc" run "${hdb[@]}" "${net[@]}" --system "You are a." --tools "$tmp/a.json" "TRANSFER[b] one" \
  >"$tmp/out" 2>&1 || fail "handoff run: $(cat "$tmp/out")"
grep -qx "b answers: TRANSFER\[b\] one" "$tmp/out" || fail "b did not answer: $(cat "$tmp/out")"
"$agentc" run "${hdb[@]}" "TRANSFER[a] two" >"$tmp/out" 2>&1 || fail "second turn: $(cat "$tmp/out")"
grep -qx "a answers: TRANSFER\[a\] two" "$tmp/out" || fail "a did not answer: $(cat "$tmp/out")"
seen() { jq -c '[.body.messages[] | .role + ":" + (.content // "") + ((.tool_calls // []) | map(.function.name) | join(","))]' "$tmp/requests" | sed -n "$1p"; }
[ "$(wc -l <"$tmp/requests")" -eq 4 ] || fail "four model calls, not $(wc -l <"$tmp/requests")"
[ "$(seen 1)" = '["system:You are a.","user:TRANSFER[b] one"]' ] || fail "call 1 saw $(seen 1)"
[ "$(seen 2)" = '["system:You are b.","user:TRANSFER[b] one","assistant:transfer_to_b","tool:transferred to b: b answers from here on"]' ] \
  || fail "call 2 saw $(seen 2)"
[ "$(seen 3)" = '["system:You are b.","user:TRANSFER[b] one","assistant:transfer_to_b","tool:transferred to b: b answers from here on","assistant:b answers: TRANSFER[b] one","user:TRANSFER[a] two"]' ] \
  || fail "call 3 (the next turn, still b's) saw $(seen 3)"
[ "$(seen 4)" = '["system:You are a.","user:TRANSFER[b] one","assistant:transfer_to_b","tool:transferred to b: b answers from here on","assistant:b answers: TRANSFER[b] one","user:TRANSFER[a] two","assistant:transfer_to_a","tool:transferred to a: a answers from here on"]' ] \
  || fail "call 4 saw $(seen 4)"
[ "$(jq -c '[.body.tools[].function.name]' "$tmp/requests" | tr '\n' ' ')" = '["transfer_to_b"] ["transfer_to_a"] ["transfer_to_a"] ["transfer_to_b"] ' ] \
  || fail "tools offered: $(jq -c '[.body.tools[].function.name]' "$tmp/requests" | tr '\n' ' ')"
"$agentc" sessions export h1 --db "$tmp/h.db" -o "$tmp/h1.jsonl" 2>/dev/null || fail "export"
[ "$(jq -c 'select(.ev == "agent.changed") | [.data.reason, .data.agent.name]' "$tmp/h1.jsonl" | tr '\n' ' ')" \
  = '["handoff","b"] ["handoff","a"] ' ] || fail "agent.changed records"
"$agentc" replay "$tmp/h1.jsonl" --check >"$tmp/r" 2>&1 || fail "handoff replay: $(cat "$tmp/r")"
"$agentc" run --no-store "${net[@]}" --system "You are a." --tools "$tmp/a.json" "TRANSFER[b] x" >"$tmp/out" 2>&1
grep -q "transfer_to_b failed.*not run: this program does not move a session" "$tmp/out" \
  || fail "handoff without a store: $(cat "$tmp/out")"

# ---- agentc diagram --tools draws the links: calls solid, handoffs dashed ---------------------
"$agentc" diagram --tools "$tmp/sup.json" >"$tmp/dot" || fail "diagram of sup.json"
grep -qF '"caller" -> "agent math" [label="agent::math"];' "$tmp/dot" || fail "call edge: $(cat "$tmp/dot")"
grep -qF 'spec: '"$spec" "$tmp/dot" || fail "math's spec in the diagram"
"$agentc" diagram --tools "$tmp/a.json" >"$tmp/dot" || fail "diagram of a.json"
grep -qF '"caller" -> "agent b" [label="transfer_to_b", style=dashed];' "$tmp/dot" || fail "handoff edge"
grep -qF '"agent b" -> "agent a" [label="transfer_to_a", style=dashed];' "$tmp/dot" || fail "b's handoff back"
[ "$(grep -c -- '->' "$tmp/dot")" -eq 2 ] || fail "each tool file once: $(cat "$tmp/dot")"
if command -v dot >/dev/null; then dot -Tsvg "$tmp/dot" >/dev/null || fail "not DOT"; fi

# ---- a bad entry is refused with the file and the entry named -------------------------------
echo '{"agents": [{"name": "a b", "description": "x"}]}' >"$tmp/bad.json"
"$agentc" run "${net[@]}" --tools "$tmp/bad.json" hi >"$tmp/out" 2>&1
[ $? -eq 3 ] || fail "bad agent name accepted"
grep -q 'bad.json: agents\[0\]: "name" must be' "$tmp/out" || fail "bad name message: $(cat "$tmp/out")"
echo '{"agents": [{"name": "x"}]}' >"$tmp/bad.json"
"$agentc" run "${net[@]}" --tools "$tmp/bad.json" hi >"$tmp/out" 2>&1
grep -q 'agents\[0\] ("x"): missing "description"' "$tmp/out" || fail "no description: $(cat "$tmp/out")"
echo '{"agents": [{"name": "x", "description": "d", "modle": "m"}]}' >"$tmp/bad.json"
"$agentc" run "${net[@]}" --tools "$tmp/bad.json" "DELEGATE[x:hi]" >"$tmp/out" 2>&1
grep -q '<- agent::x failed.*could not start: .*modle' "$tmp/out" || fail "bad agent key: $(cat "$tmp/out")"
echo "compose: ok"
