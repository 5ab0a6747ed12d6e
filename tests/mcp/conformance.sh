#!/usr/bin/env bash
# @modelcontextprotocol/conformance (pinned in tests/mcp/npm) drives agentc's MCP client
# (tests/mcp/conformance_client.c) through its client suite "core"; the scenarios agentc does
# not implement are listed in conformance/expected-failures.yml, so any other failure, or a
# listed one that starts passing, fails the test. The score is printed.
# Usage: conformance.sh CLIENT NPM_DIR
. "$(dirname "$0")/lib.sh"
client=$agentc
runner="$npm_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[ -f "$runner" ] || { echo "SKIP: @modelcontextprotocol/conformance is not installed in $npm_dir"; exit 77; }
cd "$tmp" || exit 1
# node 20: the runner imports fs.globSync (node 22+); node20.mjs supplies it
timeout 300 node --import "$here/conformance/node20.mjs" "$runner" client --command "$client" --suite core \
  --timeout 20000 --expected-failures "$here/conformance/expected-failures.yml" >"$tmp/report" 2>&1
rc=$?
sed -n '/=== SUITE SUMMARY ===/,$p' "$tmp/report"
[ $rc -eq 0 ] || fail "conformance: unexpected results (exit $rc): $(tail -25 "$tmp/report")"
grep -q '^✓ initialize: 1 passed, 0 failed' "$tmp/report" || fail "initialize did not pass"
grep -q '^✓ tools_call: 1 passed, 0 failed' "$tmp/report" || fail "tools_call did not pass"
echo ok
