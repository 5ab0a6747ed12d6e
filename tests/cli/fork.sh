#!/usr/bin/env bash
# agentc sessions fork: a 4-turn stored session with tool calls, a toolkit (plane: its states
# and context) and the State, forked at the end of each turn. Each fork holds the original's
# journal up to the end of that turn (a turn ends when the session machine leaves the state
# that invokes the agent machine), with its toolkit states and State as they were then, its
# origin recorded (the note forked_from), nothing run again; `agentc replay --check` passes
# on the original and every fork; a fork's next turn (no options: the agent of then) sees only
# the history up to its turn, and the original is unchanged. A turn that has not ended, a
# taken id and an unknown session are refused.
agentc="$1"
. "$(dirname "$0")/lib.sh"
need jq
export AGENTC_DB="$tmp/sessions.db"
D=$(printf '\xe2\x80\xa0')
fetch=$(jq -cn --arg p "${D}state.user" '{_outputPath: $p} | tojson')
greet=$(jq -cn --arg n "${D}state.user.name" --arg p "${D}state.greeting" '{name: $n, _outputPath: $p} | tojson')
cat >"$tmp/state.json" <<'JSON'
{"state": {"initial": {"log": []}},
 "tools": [
  {"name": "fetch_user", "description": "the user", "command": ["sh", "-c", "echo '{\"name\":\"Ada\"}'"]},
  {"name": "greet", "description": "greets", "parameters": {"type": "object",
     "properties": {"name": {"type": "string"}}, "required": ["name"]},
   "command": ["sh", "-c", "jq -c '{hello: .name}'"]}]}
JSON
{
  jq -cn --argjson a "$fetch" '{tool_calls: [{id: "a1", name: "plane__login", arguments: "{}"}, {id: "a2", name: "fetch_user", arguments: $a}]}'
  echo '{"content": "turn one"}'
  echo '{"tool_calls": [{"id": "b1", "name": "plane__select_project", "arguments": "{\"project\": \"beta\"}"}]}'
  echo '{"content": "turn two"}'
  jq -cn --argjson a "$greet" '{tool_calls: [{id: "c1", name: "greet", arguments: $a}]}'
  echo '{"content": "turn three"}'
  echo '{"tool_calls": [{"id": "d1", "name": "plane__deselect_project", "arguments": "{}"}]}'
  echo '{"content": "turn four"}'
  echo '{"content": "turn five"}'
} >"$tmp/s.jsonl"
prompts=("one" "two" "three" "four")
for p in "${prompts[@]}"; do
  "$agentc" run --session o --provider script --script "$tmp/s.jsonl" \
    --tools examples/toolkits/plane.json --tools "$tmp/state.json" "$p" >"$tmp/out" 2>"$tmp/err" \
    || fail "turn $p: $(cat "$tmp/err")"
done
show() { "$agentc" sessions show "$1" --json; }
show o >"$tmp/o.json" || fail "show o"
jq -e '.session.toolkits.plane.states == ["authenticated"] and .session.state.greeting == {"hello": "Ada"}' \
  "$tmp/o.json" >/dev/null || fail "the original's toolkits and State: $(jq -c '.session | {toolkits, state}' "$tmp/o.json")"
o_events=$(jq .events "$tmp/o.json")
"$agentc" sessions export o -o "$tmp/o.jsonl" 2>/dev/null || fail "export o"
"$agentc" replay "$tmp/o.jsonl" --check >"$tmp/r" || fail "replay --check of the original: $(cat "$tmp/r")"

users() { jq -c '[.session.conversation.messages[] | select(.role == "user") | .content]' "$1"; }
want_states=('["authenticated"]' '["authenticated","project_selected"]' '["authenticated","project_selected"]' '["authenticated"]')
for n in 1 2 3 4; do
  "$agentc" sessions fork o --at "$n" --as "f$n" >"$tmp/out" 2>"$tmp/err" || fail "fork at $n: $(cat "$tmp/err")"
  [ "$(cat "$tmp/out")" = "f$n" ] || fail "fork at $n printed $(cat "$tmp/out")"
  show "f$n" >"$tmp/f.json" || fail "show f$n"
  [ "$(users "$tmp/f.json")" = "$(jq -cn --argjson n "$n" '["one","two","three","four"][:$n]')" ] \
    || fail "fork at $n holds the user messages $(users "$tmp/f.json")"
  jq -e '.at_rest and .status == "idle"' "$tmp/f.json" >/dev/null || fail "fork at $n is not at rest"
  [ "$(jq -c .session.toolkits.plane.states "$tmp/f.json")" = "${want_states[$((n - 1))]}" ] \
    || fail "fork at $n: toolkit states $(jq -c .session.toolkits.plane.states "$tmp/f.json")"
  jq -e '.session.state.user == {"name": "Ada"}' "$tmp/f.json" >/dev/null || fail "fork at $n: State"
  if [ "$n" -ge 3 ]; then g='{"hello":"Ada"}'; else g=null; fi
  [ "$(jq -c .session.state.greeting "$tmp/f.json")" = "$g" ] || fail "fork at $n: State greeting"
  rm -f "$tmp/f.jsonl"
  "$agentc" sessions export "f$n" -o "$tmp/f.jsonl" 2>/dev/null || fail "export f$n"
  jq -s -e --arg n "$n" 'map(select(.note == "forked_from"))[0].data | .id == "o" and .at_turn == ($n | tonumber)' \
    "$tmp/f.jsonl" >/dev/null || fail "fork at $n records no origin"
  k=$(jq -s 'map(select(.n != null) | .n) | max' "$tmp/f.jsonl")
  [ "$(jq -c 'select(.n != null)' "$tmp/f.jsonl")" = "$(jq -c --argjson k "$k" 'select(.n != null and .n <= $k)' "$tmp/o.jsonl")" ] \
    || fail "fork at $n: its events are not the original's up to $k"
  "$agentc" replay "$tmp/f.jsonl" --check >"$tmp/r" || fail "replay --check of fork $n: $(cat "$tmp/r")"
  # its next turn: the agent of then, only the history up to turn n
  "$agentc" run --session "f$n" "next" >"$tmp/out" 2>"$tmp/err" || fail "fork $n next turn: $(cat "$tmp/err")"
  ! grep -q resuming "$tmp/err" || fail "fork $n resumed a turn"
  show "f$n" >"$tmp/f.json"
  [ "$(users "$tmp/f.json")" = "$(jq -cn --argjson n "$n" '["one","two","three","four"][:$n] + ["next"]')" ] \
    || fail "fork $n's next turn saw $(users "$tmp/f.json")"
  if [ "$n" = 1 ]; then # it ran the script's turn 2: select_project needs the login of turn 1
    [ "$(jq -c .session.toolkits.plane.states "$tmp/f.json")" = '["authenticated","project_selected"]' ] \
      || fail "fork 1's next turn: toolkit states $(jq -c .session.toolkits.plane.states "$tmp/f.json")"
  fi
done
show o >"$tmp/o2.json"
[ "$(jq .events "$tmp/o2.json")" = "$o_events" ] || fail "the original changed"
"$agentc" sessions fork o --at 5 2>"$tmp/err"; [ $? -eq 1 ] || fail "a fork at a turn not ended"
grep -q "4 finished turns: no turn 5" "$tmp/err" || fail "turn 5: $(cat "$tmp/err")"
"$agentc" sessions fork o --at 1 --as f1 2>"$tmp/err"; [ $? -eq 1 ] || fail "a fork onto a taken id"
grep -q "already has a session 'f1'" "$tmp/err" || fail "taken id: $(cat "$tmp/err")"
"$agentc" sessions fork nosuch --at 1 2>"$tmp/err"; [ $? -eq 1 ] || fail "a fork of no session"
"$agentc" sessions fork o 2>"$tmp/err"; [ $? -eq 2 ] || fail "a fork without --at"
echo ok
