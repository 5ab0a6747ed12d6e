#!/usr/bin/env bash
# The result cache on an MCP server's tools (server-filesystem): "cache": {"tools": {GLOB}}
# applies to the tools the server marks readOnlyHint. A read answered from the cache after
# the file changed on disk shows that the server was not asked; write_file matches a
# pattern too but is not read-only: refused (said on stderr) and run each time. --jsonl
# says which results are cached, and from which call.
. "$(dirname "$0")/lib.sh"
need_reference_servers
mkdir -p "$tmp/docs"
printf 'first' >"$tmp/docs/a.txt"
cat >"$tmp/tools.json" <<JSON
{"mcp": [{"name": "fs", "command": ["node", "$filesystem", "$tmp/docs"], "start_timeout": "30s",
          "timeout": "20s",
          "cache": {"tools": {"read_*": {"ttl": "10m", "scope": "engine"}, "write_file": {"ttl": "10m"}}}}]}
JSON
call() { printf '{"id": "%s", "name": "%s", "arguments": %s}' "$1" "$2" "$(jq -c -n --argjson a "$3" '$a | tojson')"; }
read_args="{\"path\": \"$tmp/docs/a.txt\"}"
write_args="{\"path\": \"$tmp/docs/a.txt\", \"content\": \"second\"}"
script "$tmp/s" "{\"tool_calls\": [$(call r1 fs::read_text_file "$read_args")]}" \
  "{\"tool_calls\": [$(call w1 fs::write_file "$write_args")]}" \
  "{\"tool_calls\": [$(call r2 fs::read_text_file "$read_args")]}" \
  "{\"tool_calls\": [$(call w2 fs::write_file "$write_args")]}" \
  '{"content": "done"}'
run_agent "$tmp/tools.json" "$tmp/s"
[ "$rc" = 0 ] || fail "run: exit $rc: $(cat "$tmp/err")"
expect_result r1 true '^first$'
expect_result w1 true 'Successfully wrote'
[ "$(cat "$tmp/docs/a.txt")" = second ] || fail "write_file did not write"
# the file says "second" now: r2's "first" came from the cache, not from the server
expect_result r2 true '^first$'
jq -e -s 'map(select(.type == "tool_result" and .id == "r2")) | .[0] | .cached == true and .cached_from == "r1"' \
  "$tmp/out" >/dev/null || fail "r2 is not marked cached: $(grep '"r2"' "$tmp/out")"
jq -e -s 'map(select(.type == "tool_result" and (.id == "r1" or .id == "w1" or .id == "w2")) | has("cached")) | any | not' \
  "$tmp/out" >/dev/null || fail "a call that ran is marked cached"
# write_file matched a pattern but is not read-only: refused, and it ran again
grep -q "tool 'write_file' matches \"cache\" pattern \"write_file\" but the server does not mark it read-only" "$tmp/err" \
  || fail "the refusal is not said: $(cat "$tmp/err")"
expect_result w2 true 'Successfully wrote'
# a bad declaration is refused when the file is loaded
cat >"$tmp/bad.json" <<JSON
{"mcp": [{"name": "fs", "command": ["node", "$filesystem", "$tmp/docs"], "cache": {"tools": {"*": {"ttl": "soon"}}}}]}
JSON
"$agentc" check --tools "$tmp/bad.json" >"$tmp/o" 2>&1 && fail "check accepted a bad cache"
grep -q '"cache": "\*": "ttl" must be a positive duration' "$tmp/o" || fail "check message: $(cat "$tmp/o")"
echo ok
