#!/usr/bin/env bash
# Toolkit states and contexts in the durable store: kept across `run --session`,
# reported by --jsonl done and `sessions show`, and back after `kill -9` in the
# middle of a turn (rebuilt from the store's snapshot and journal).
agentc="$1"
. "$(dirname "$0")/lib.sh"
need jq
db="$tmp/db"
plane="$PWD/examples/toolkits/plane.json"
cat >"$tmp/nap.json" <<'J'
{"tools": [{"name": "nap", "description": "sleeps", "command": ["sh", "-c", "sleep 5; echo up"]}]}
J
cat >"$tmp/s.jsonl" <<'J'
{"tool_calls": [{"id": "a1", "name": "plane__login", "arguments": "{}"}]}
{"content": "logged in"}
{"tool_calls": [{"id": "b1", "name": "plane__select_project", "arguments": "{\"project\": \"beta\"}"}]}
{"content": "selected"}
{"tool_calls": [{"id": "c1", "name": "plane__deselect_project", "arguments": "{}"}, {"id": "c2", "name": "nap", "arguments": "{}"}]}
{"content": "after the crash"}
J
run() { "$agentc" run --db "$db" --session S --provider script --script "$tmp/s.jsonl" \
          --tools "$plane" --tools "$tmp/nap.json" --jsonl "$@"; }

run "log in" >"$tmp/o1" 2>"$tmp/e1" || fail "run 1: $(cat "$tmp/e1")"
[ "$(jq -c 'select(.type=="done") | .toolkits.plane.states' "$tmp/o1")" = '["authenticated"]' ] ||
  fail "run 1 states: $(cat "$tmp/o1")"

# continued: select_project needs the authenticated state of the first run
run "select beta" >"$tmp/o2" 2>"$tmp/e2" || fail "run 2: $(cat "$tmp/e2")"
jq -se 'map(select(.type=="tool_result" and .id=="b1")) | .[0].ok' "$tmp/o2" >/dev/null ||
  fail "select_project failed: $(cat "$tmp/o2")"
[ "$(jq -c 'select(.type=="done") | .toolkits.plane' "$tmp/o2")" = \
  '{"states":["authenticated","project_selected"],"context":{"projects":["alpha","beta"],"selected_project":"beta"}}' ] ||
  fail "run 2 toolkits: $(cat "$tmp/o2")"

"$agentc" sessions show S --json --db "$db" >"$tmp/show" || fail "sessions show"
[ "$(jq -c '.session.toolkits.plane.states' "$tmp/show")" = '["authenticated","project_selected"]' ] ||
  fail "sessions show: $(cat "$tmp/show")"

"$agentc" sessions show S --db "$db" >"$tmp/show_text" || fail "sessions show (text)"
grep -qF 'toolkit  plane: states ["authenticated","project_selected"], context {"projects":["alpha","beta"],"selected_project":"beta"}' "$tmp/show_text" ||
  fail "sessions show text: $(cat "$tmp/show_text")"

# killed while nap sleeps, after deselect_project finished and was committed
run "deselect and nap" >"$tmp/o3" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q '"id":"c1"' "$tmp/o3" 2>/dev/null && grep -q '"type":"tool_result","id":"c1"' "$tmp/o3" && break
  sleep 0.05
done
grep -q '"type":"tool_result","id":"c1"' "$tmp/o3" || { kill -9 $pid; fail "deselect did not finish: $(cat "$tmp/o3")"; }
# the commit at the end of that loop turn (the store is read while nap sleeps)
deselected() {
  "$agentc" sessions show S --json --db "$db" 2>/dev/null |
    jq -e '.session.toolkits.plane.states == ["authenticated"]' >/dev/null
}
wait_for deselected || { kill -9 $pid; fail "deselect_project was not committed: $(cat "$tmp/o3")"; }
kill -9 $pid
wait $pid 2>/dev/null
"$agentc" sessions show S --json --db "$db" >"$tmp/show2" || fail "sessions show after kill"
[ "$(jq -c '.session.toolkits.plane.states' "$tmp/show2")" = '["authenticated"]' ] ||
  fail "after kill -9: $(jq -c '.session.toolkits' "$tmp/show2")"
# (resuming the interrupted turn is covered by the store's own tests; the state it starts from
# is the one shown above)
echo ok
