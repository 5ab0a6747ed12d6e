#!/usr/bin/env bash
# agentc against an MCP server that asks too much (tests/mcp/test_server.js): what it makes
# agentc hold stays bounded and each excess fails with what happened.
#  - a server that stops reading while it sends requests: past 16 MiB of unsent answers it is
#    a fault ("stopped reading its input"), agentc's memory stays bounded;
#  - more tools than "max_tools" (1000 by default): a fault that says so; within a raised
#    "max_tools" they are offered;
#  - a list_changed after every tools/list: at most one listing a second;
#  - a result over "max_output" is cut there, as a command tool's output is;
#  - a message nested too deeply is a fault that says so; a tool whose name holds a NUL is
#    left out and the others are offered.
. "$(dirname "$0")/lib.sh"
call() { printf '{"id": "%s", "name": "%s", "arguments": %s}' "$1" "$2" "$(jq -c -n --argjson a "$3" '$a | tojson')"; }
tools() { # NAME ARGS-JSON EXTRA-JSON: a tool file with the test server
  jq -n --arg s "$test_server" --arg log "$tmp/log" --argjson a "$1" --argjson x "$2" \
    '{mcp: [{name: "t", command: (["node", $s, "--bounds", "--log", $log] + $a), timeout: "20s", start_timeout: "30s"} + $x]}' \
    >"$tmp/tools.json"
}

# a server that stops reading: a fault past 16 MiB queued, the session goes on
tools '[]' '{}'
script "$tmp/s" "{\"tool_calls\": [$(call c1 t::stop_reading '{}')]}" \
  "{\"tool_calls\": [$(call c2 t::echo '{"text":"after"}')]}" '{"content": "done"}'
measure=(); [ -x /usr/bin/time ] && measure=(/usr/bin/time -f '%M' -o "$tmp/rss") # peak RSS, kB
echo 0 >"$tmp/rss"
"${measure[@]}" timeout 60 "$agentc" run --provider script --script "$tmp/s" \
  --tools "$tmp/tools.json" --jsonl hi >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "run failed ($rc): $(tail -c 400 "$tmp/err")"
expect_result c1 false "^MCP server 't' stopped reading its input \([0-9]+ bytes unsent, the limit is 16777216\)"
expect_result c2 true '^after$'
[ "$(cat "$tmp/rss")" -lt 400000 ] || fail "agentc grew to $(cat "$tmp/rss") kB"

# more tools than max_tools: a fault that says so; a raised max_tools takes them
tools '["--extra-tools", "1200"]' '{}'
script "$tmp/s" "{\"tool_calls\": [$(call c1 t::echo '{"text":"x"}')]}" '{"content": "done"}'
run_agent "$tmp/tools.json" "$tmp/s"
expect_result c1 false "^MCP server 't' lists more than 1000 tools \(its \"max_tools\"\)"
tools '["--extra-tools", "1200"]' '{"max_tools": 1300}'
script "$tmp/s" "{\"tool_calls\": [$(call c1 t::gen1199 '{}')]}" '{"content": "done"}'
run_agent "$tmp/tools.json" "$tmp/s"
expect_result c1 true '^gen1199$'
tools '[]' '{"max_tools": 0}'
run_agent "$tmp/tools.json" "$tmp/s"
[ $rc -ne 0 ] && grep -q '"max_tools" must be an integer from 1 to 1000000' "$tmp/err" || fail "max_tools 0: $(cat "$tmp/err")"

# a server that says its list changed after every listing: one listing a second at most
tools '["--list-changed-loop"]' '{}'
: >"$tmp/log"
script "$tmp/s" "{\"tool_calls\": [$(call c1 t::slow '{"ms": 3000}')]}" '{"content": "done"}'
run_agent "$tmp/tools.json" "$tmp/s"
expect_result c1 true '^slept 3000 ms$'
lists=$(grep -c '"tools/list"' "$tmp/log")
[ "$lists" -ge 2 ] && [ "$lists" -le 6 ] || fail "$lists listings in about 3 s"

# max_output cuts a result; too deep a message and a NUL in a name are said
tools '["--nul-tool"]' '{"max_output": "100KB"}'
script "$tmp/s" "{\"tool_calls\": [$(call c1 t::big '{"n": 3000000}'), $(call c2 t::big '{"n": 1000}')]}" \
  "{\"tool_calls\": [$(call c3 t::deep '{}')]}" "{\"tool_calls\": [$(call c4 t::echo '{"text":"still here"}')]}" \
  '{"content": "done"}'
run_agent "$tmp/tools.json" "$tmp/s" --journal "$tmp/journal"
[ $rc -eq 0 ] || fail "run failed ($rc): $(tail -c 400 "$tmp/err")"
expect_result c1 true '^b+$'
[ "$(result c1 | head -c 100001 | tr -d b)" = "" ] && result c1 | tail -n1 | grep -qx '\[output cut at 100000 bytes\]' \
  || fail "c1 is not cut at 100000 bytes: $(result c1 | tail -c 100)"
[ "$(result c2 | wc -c)" -eq 1001 ] || fail "c2 was cut"
[ "$(wc -c <"$tmp/journal")" -lt 1000000 ] || fail "the journal holds $(wc -c <"$tmp/journal") bytes"
expect_result c3 false "^MCP server 't' wrote a message nested too deeply"
expect_result c4 true '^still here$'
echo ok
