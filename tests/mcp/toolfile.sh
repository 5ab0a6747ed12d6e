#!/usr/bin/env bash
# Tool files with "mcp": mistakes are refused with a message naming the file and the entry
# (never a header or env value), "tools" and "mcp" together, names clashing; agentc check
# --tools [--start].
. "$(dirname "$0")/lib.sh"
script "$tmp/s" '{"content": "done"}'
check() { # JSON EXPECTED-MESSAGE
  printf '%s\n' "$1" >"$tmp/t.json"
  run_agent "$tmp/t.json" "$tmp/s"
  [ $rc -ne 0 ] || fail "accepted: $1"
  grep -qF -- "$2" "$tmp/err" || fail "for $1 expected '$2', got: $(cat "$tmp/err")"
  ! grep -q "sekrit" "$tmp/err" || fail "a secret leaked: $(cat "$tmp/err")"
}
check '{"mcp": {"name": "a"}}' '"mcp" must be an array of servers'
check '{"mcp": [{"name": "a", "command": ["x"], "cmd": 1}]}' 't.json: mcp[0] ("a"): unknown key "cmd"'
check '{"mcp": [{"name": "a"}]}' 'needs either "command" (stdio) or "url" (Streamable HTTP)'
check '{"mcp": [{"name": "a", "url": "http://h/", "headers": {"Authorization": "Bearer sekrit-1234\nX: y"}}]}' \
  '"headers": bad header "Authorization"'
check '{"mcp": [{"name": "a", "command": ["x"], "env": {"1BAD": "sekrit-1234"}}]}' '"env": bad variable "1BAD"'
check '{"mcp": [{"name": "a", "command": ["x"], "timeout": "0s"}]}' '"timeout" must be a duration'
check '{"oops": []}' 'unknown key "oops" (only "tools", "toolkits", "state", "mcp" and "agents" are allowed)'
# "tools" and "mcp" in one file; the server's tools next to the file's
cat >"$tmp/both.json" <<JSON
{"tools": [{"name": "hello", "description": "says hello", "command": ["echo", "hello"]}],
 "mcp": [{"name": "t", "command": ["node", "$test_server"], "start_timeout": "30s"}]}
JSON
script "$tmp/s" '{"tool_calls": [{"id": "c1", "name": "hello", "arguments": "{}"}, {"id": "c2", "name": "t::add", "arguments": "{\"a\": 2, \"b\": 3}"}, {"id": "c3", "name": "t::add", "arguments": "{\"a\": \"two\", \"b\": 1}"}]}' \
  '{"content": "done"}'
run_agent "$tmp/both.json" "$tmp/s"
[ $rc -eq 0 ] || fail "run failed: $(cat "$tmp/err")"
expect_result c1 true '^hello$'
expect_result c2 true '^5$'
expect_result c3 false 'invalid arguments: /a: expected number, got string'
# a tool file tool called like a server's tool: the server's is refused (not offered), and a
# call to it says why
cat >"$tmp/clash.json" <<JSON
{"tools": [{"name": "t__add", "description": "clash", "command": ["echo"]}],
 "mcp": [{"name": "t", "command": ["node", "$test_server"], "start_timeout": "30s"}]}
JSON
script "$tmp/s2" '{"tool_calls": [{"id": "c2", "name": "t::add", "arguments": "{\"a\": 2, \"b\": 3}"}, {"id": "c3", "name": "t::echo", "arguments": "{\"text\": \"the others are there\"}"}]}' '{"content": "done"}'
run_agent "$tmp/clash.json" "$tmp/s2"
[ $rc -eq 0 ] || fail "run failed: $(cat "$tmp/err")"
expect_result c2 false "tool 't::add' is defined twice \(the model would see 't__add' under the same name\)"
expect_result c3 true '^the others are there$'
# agentc check --tools: the declarations checked as run parses them, the servers counted;
# --start starts them and names those that cannot start (exit 1)
cat >"$tmp/three.json" <<JSON
{"mcp": [{"name": "bad", "command": ["no-such-mcp-server-cmd"], "env": {"T_SECRET": "sekrit-ENV-1"}},
         {"name": "gone", "url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": "sekrit-HDR-2"}},
         {"name": "t", "command": ["node", "$test_server"], "start_timeout": "30s"}]}
JSON
"$agentc" check --tools "$tmp/three.json" >"$tmp/out" 2>"$tmp/err" || fail "check: $(cat "$tmp/err")"
grep -q "ok: 0 tools, 0 toolkits, 3 MCP servers (not started" "$tmp/out" || fail "check: $(cat "$tmp/out")"
"$agentc" check --tools "$tmp/three.json" --start >"$tmp/out" 2>"$tmp/err" && fail "check --start accepted a server that cannot start"
grep -q "MCP server 't': started, protocol 2025-11-25, 15 tools" "$tmp/out" || fail "check --start: $(cat "$tmp/out")"
grep -q "MCP server 'bad' could not start: cannot run 'no-such-mcp-server-cmd'" "$tmp/err" \
  && grep -q "MCP server 'gone' cannot be reached over HTTP" "$tmp/err" \
  && grep -q "2 of 3 MCP servers cannot start" "$tmp/err" || fail "check --start: $(cat "$tmp/err")"
! grep -q sekrit "$tmp/out" "$tmp/err" || fail "a secret leaked"
printf '%s\n' '{"mcp": [{"name": "a", "command": ["x"], "cmd": 1}]}' >"$tmp/t.json"
"$agentc" check --tools "$tmp/t.json" 2>"$tmp/err" && fail "check accepted a bad declaration"
grep -qF 't.json: mcp[0] ("a"): unknown key "cmd"' "$tmp/err" || fail "check: $(cat "$tmp/err")"
echo ok
