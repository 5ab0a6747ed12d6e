#!/usr/bin/env bash
# agentc against tests/mcp/test_server.js through the CLI: faults mid-session (a crash,
# garbage, an error result) fail the call and the session goes on, the server restarted; a
# server that will not start or never answers is a toolkit whose calls fail with the reason
# while the other server works, nothing hangs;
# Ctrl-C sends notifications/cancelled; "env" values never reach output, errors or journal.
. "$(dirname "$0")/lib.sh"
need setsid
cat >"$tmp/tools.json" <<JSON
{"mcp": [{"name": "t", "command": ["node", "$test_server", "--log", "$tmp/log", "--starts", "$tmp/starts"],
          "env": {"T_SECRET": "sekrit-ENV-7788"}, "timeout": "20s", "start_timeout": "30s"}]}
JSON
call() { printf '{"id": "%s", "name": "%s", "arguments": %s}' "$1" "$2" "$(jq -c -n --argjson a "$3" '$a | tojson')"; }
script "$tmp/s" "{\"tool_calls\": [$(call c1 t::crash '{}')]}" \
  "{\"tool_calls\": [$(call c2 t::echo '{"text":"after the crash"}')]}" \
  "{\"tool_calls\": [$(call c3 t::garbage '{}')]}" \
  "{\"tool_calls\": [$(call c4 t::echo '{"text":"after the garbage"}'), $(call c5 t::fail '{}'), $(call c6 t::odd_schema '{"s":"x"}'),
    $(call c7 t::leak '{}'), $(call c8 t::image '{}'), $(call c9 t::structured '{}')]}" \
  '{"content": "done"}'
run_agent "$tmp/tools.json" "$tmp/s" --journal "$tmp/journal"
[ $rc -eq 0 ] || fail "run failed ($rc): $(cat "$tmp/err")"
expect_result c1 false "^MCP server 't' exited \(exit status 7\): test server: crashing on purpose$"
expect_result c2 true '^after the crash$'
expect_result c3 false "^MCP server 't' wrote a line that is not JSON-RPC"
expect_result c4 true '^after the garbage$'
expect_result c5 false '^the tool failed on purpose$'
expect_result c6 true '^got \{"s":"x"\}$'
expect_result c7 true '^my token is \[redacted\]$'
expect_result c8 true '^\[image content: image/png, 300 bytes, not shown\]'
expect_result c9 true '^see structured
\{"n":42\}$'
[ "$(wc -l <"$tmp/starts")" -eq 3 ] || fail "expected 3 starts (2 restarts), got $(wc -l <"$tmp/starts")"
tail -n1 "$tmp/out" | jq -e '.status == "completed"' >/dev/null || fail "the session did not go on"
! grep -q "sekrit-ENV" "$tmp/out" "$tmp/err" "$tmp/journal" || fail "an env value leaked"
# the journal replays
"$agentc" replay "$tmp/journal" --check >/dev/null || fail "the journal does not replay"

# will not start / exits at once / never answers initialize: the session goes on, the calls to
# that server fail with the reason, the other server's work
script "$tmp/s3" "{\"tool_calls\": [$(call b1 bad::echo '{"text":"x"}'), $(call b2 t::echo '{"text":"the other works"}')]}" \
  '{"content": "done"}'
for c in 'no-such-mcp-server-cmd|could not start: cannot run .no-such-mcp-server-cmd.: No such file or directory' \
         'node|exited \(exit status 3\): test server: refusing to start' \
         'node|did not complete the handshake within 1000 ms'; do
  cmd=${c%%|*} msg=${c#*|}
  case $msg in *refusing*) flag=--exit-at-start ;; *handshake*) flag=--silent ;; *) flag=--none ;; esac
  cat >"$tmp/bad.json" <<JSON
{"mcp": [{"name": "bad", "command": ["$cmd", "$test_server", "$flag"], "start_timeout": "1s", "timeout": "1s",
          "env": {"T_SECRET": "sekrit-ENV-7788"}},
         {"name": "t", "command": ["node", "$test_server"], "start_timeout": "30s"}]}
JSON
  run_agent "$tmp/bad.json" "$tmp/s3"
  [ $rc -eq 0 ] || fail "$flag: exit $rc: $(cat "$tmp/err")"
  expect_result b1 false "^MCP server 'bad' $msg"
  expect_result b2 true '^the other works$'
  ! grep -q "sekrit-ENV" "$tmp/out" "$tmp/err" || fail "an env value leaked into an error"
done

# Ctrl-C during a call: notifications/cancelled reaches the server
script "$tmp/s2" "{\"tool_calls\": [$(call k1 t::slow '{"ms":20000}')]}" '{"content": "never"}'
: >"$tmp/log"
setsid "$agentc" run --provider script --script "$tmp/s2" --tools "$tmp/tools.json" --jsonl hi >"$tmp/out2" 2>"$tmp/err2" &
pid=$!
for _ in $(seq 1 600); do grep -q '"tools/call"' "$tmp/log" && break; sleep 0.05; done
grep -q '"tools/call"' "$tmp/log" || fail "the call did not reach the server: $(cat "$tmp/err2")"
kill -INT "$pid"
wait "$pid"; rc=$?
[ $rc -eq 130 ] || fail "interrupted run: exit $rc"
for _ in $(seq 1 600); do grep -q 'notifications/cancelled' "$tmp/log" && break; sleep 0.05; done
jq -e -s 'map(select(.method == "notifications/cancelled")) | length == 1' "$tmp/log" >/dev/null \
  || fail "no notifications/cancelled: $(tail -3 "$tmp/log")"
echo ok
