#!/usr/bin/env bash
# MCP calls follow the store's recovery rules: agentc is killed (-9) while two MCP calls run
# in a stored session, then resumed. The call to a server the tool file marks idempotent runs
# again and completes; the call to one that is not (the default, no idempotentHint) is not run
# again: the model gets "interrupted: the tool may or may not have completed". Each server's
# log shows how many times it was asked.
. "$(dirname "$0")/lib.sh"
need setsid
cat >"$tmp/tools.json" <<JSON
{"mcp": [{"name": "once", "command": ["node", "$test_server", "--log", "$tmp/once.log"], "timeout": "20s", "start_timeout": "30s"},
         {"name": "again", "command": ["node", "$test_server", "--log", "$tmp/again.log"], "timeout": "20s", "start_timeout": "30s",
          "idempotent": true}]}
JSON
call() { printf '{"id": "%s", "name": "%s", "arguments": %s}' "$1" "$2" "$(jq -c -n --argjson a "$3" '$a | tojson')"; }
script "$tmp/s" "{\"tool_calls\": [$(call k1 once::slow '{"ms":3000}'), $(call k2 again::slow '{"ms":3000}')]}" \
  '{"content": "done"}'
export AGENTC_DB="$tmp/sessions.db"
setsid "$agentc" run --provider script --script "$tmp/s" --tools "$tmp/tools.json" --session dur --jsonl hi \
  >"$tmp/out1" 2>"$tmp/err1" &
bg=$!
asked() { [ -f "$1" ] && [ "$(grep -c '"tools/call"' "$1")" -ge "$2" ]; }
for _ in $(seq 1 600); do asked "$tmp/once.log" 1 && asked "$tmp/again.log" 1 && break; sleep 0.05; done
asked "$tmp/once.log" 1 && asked "$tmp/again.log" 1 || fail "the calls did not start: $(cat "$tmp/err1")"
kill -9 -- -"$bg" 2>/dev/null || kill -9 "$bg"
wait "$bg" 2>/dev/null
"$agentc" sessions show dur --json | jq -e '.at_rest == false' >/dev/null || fail "the session should be mid-turn"
timeout 60 "$agentc" resume dur --provider script --script "$tmp/s" --tools "$tmp/tools.json" --jsonl \
  >"$tmp/out" 2>"$tmp/err" || fail "resume: $(cat "$tmp/err")"
expect_result k1 false '^interrupted: the tool may or may not have completed'
expect_result k2 true '^slept 3000 ms$'
[ "$(grep -c '"tools/call"' "$tmp/once.log")" -eq 1 ] || fail "the non-idempotent call was sent again"
[ "$(grep -c '"tools/call"' "$tmp/again.log")" -eq 2 ] || fail "the idempotent call was not sent again"
tail -n1 "$tmp/out" | jq -e '.type == "done" and .status == "completed" and .answer == "done"' >/dev/null \
  || fail "not completed: $(tail -n1 "$tmp/out")"
echo ok
