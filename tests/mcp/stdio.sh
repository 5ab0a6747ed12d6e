#!/usr/bin/env bash
# The reference servers over stdio: server-everything (echo, add, a long call with progress,
# an image, structured content, a call cancelled midway by its timeout) and
# server-filesystem (list, read, an error result), and the protocol version in the journal.
. "$(dirname "$0")/lib.sh"
need_reference_servers
mkdir -p "$tmp/docs"
echo "the quick brown fox" >"$tmp/docs/a.txt"
cat >"$tmp/tools.json" <<JSON
{"mcp": [{"name": "ev", "command": ["node", "$everything", "stdio"], "timeout": "20s", "start_timeout": "30s"},
         {"name": "evslow", "command": ["node", "$everything", "stdio"], "timeout": "3s", "start_timeout": "30s"},
         {"name": "fs", "command": ["node", "$filesystem", "$tmp/docs"], "start_timeout": "30s"}]}
JSON
call() { printf '{"id": "%s", "name": "%s", "arguments": %s}' "$1" "$2" "$(jq -c -n --argjson a "$3" '$a | tojson')"; }
script "$tmp/s" "{\"tool_calls\": [$(call c1 ev::echo '{"message":"hello mcp"}'), $(call c2 ev::get-sum '{"a":2,"b":40}'),
  $(call c3 ev::trigger-long-running-operation '{"duration":1,"steps":3}'), $(call c4 ev::get-tiny-image '{}'),
  $(call c5 ev::get-structured-content '{"location":"Chicago"}'), $(call c6 ev::echo '{"nomessage":1}')]}" \
  "{\"tool_calls\": [$(call d1 evslow::trigger-long-running-operation '{"duration":8,"steps":8}')]}" \
  "{\"tool_calls\": [$(call e1 evslow::echo '{"message":"still here"}'), $(call e2 fs::list_directory "{\"path\":\"$tmp/docs\"}"),
  $(call e3 fs::read_text_file "{\"path\":\"$tmp/docs/a.txt\"}"), $(call e4 fs::read_text_file "{\"path\":\"$tmp/docs/missing.txt\"}"),
  $(call e5 fs::read_text_file "{\"path\":\"/etc/passwd\"}")]}" \
  '{"content": "done"}'
run_agent "$tmp/tools.json" "$tmp/s" --journal "$tmp/journal"
[ $rc -eq 0 ] || fail "run failed ($rc): $(cat "$tmp/err")"
expect_result c1 true '^Echo: hello mcp$'
expect_result c2 true 'sum of 2 and 40 is 42'
expect_result c3 true 'Long running operation completed'
n=$(jq -s 'map(select(.type == "tool_progress" and .id == "c3")) | length' "$tmp/out")
[ "$n" -ge 3 ] || fail "expected 3 progress lines for c3, got $n: $(cat "$tmp/out")"
jq -e -s 'map(select(.type == "tool_progress" and .id == "c3")) | last | .progress == 3 and .total == 3' "$tmp/out" >/dev/null \
  || fail "bad progress lines"
expect_result c4 true '\[image content: image/png, [0-9]+ bytes, not shown\]'
expect_result c5 true '"temperature"'
expect_result c6 false 'invalid arguments: .*missing required property "message"'
# cancelled midway: the call times out after 1.5 s, the session goes on, the server answers next
expect_result d1 false "MCP server 'evslow': tools/call 'trigger-long-running-operation' timed out after 3000 ms"
expect_result e1 true '^Echo: still here$'
expect_result e2 true '\[FILE\] a.txt'
expect_result e3 true 'the quick brown fox'
expect_result e4 false 'ENOENT|no such file|not found'
expect_result e5 false 'denied|outside|not allowed'
tail -n1 "$tmp/out" | jq -e '.type == "done" and .status == "completed"' >/dev/null || fail "not completed: $(tail -n1 "$tmp/out")"
# the journal records the protocol version each server negotiated
# (servers start in the background: the tools.changed event before the first call says it)
grep '"mcp"' "$tmp/journal" | tail -n1 | jq -e '[.. | objects | select(has("protocol"))] | map(.protocol) | unique == ["2025-11-25"]' >/dev/null \
  || fail "the journal does not record the negotiated version: $(head -c 600 "$tmp/journal")"
"$agentc" replay "$tmp/journal" --check >/dev/null || fail "the journal does not replay"
echo ok
