#!/usr/bin/env bash
# server-everything in its Streamable HTTP mode on 127.0.0.1: list, call (echo, add, a long
# call with progress over SSE, an image, an error result, an embedded resource), a call
# cancelled by its timeout, the session kept (Mcp-Session-Id) and renewed when the server
# forgets it (restarted mid-run: 404, a new session, the call sent again), header values never
# in the output, errors or journal.
. "$(dirname "$0")/lib.sh"
need_reference_servers
need setsid
need ss
srv_pids=()
stop_servers() { [ -f "$tmp/srv.pid" ] && kill "$(cat "$tmp/srv.pid")" 2>/dev/null; cleanup; }
trap stop_servers EXIT
# start_http PORT: server-everything on 127.0.0.1:PORT in its own session, stopped by itself
# after 100 s at the latest; its pid in $tmp/srv.pid
cat >"$tmp/start_http.sh" <<SH
#!/usr/bin/env bash
port=\$1
: >"$tmp/srv.log"
PORT=\$port setsid timeout 100 node --require "$here/listen_local.cjs" "$everything" streamableHttp \
  >>"$tmp/srv.log" 2>&1 </dev/null &
echo \$! >"$tmp/srv.pid"
for _ in \$(seq 1 600); do grep -q "listening on port" "$tmp/srv.log" && exit 0; grep -q "already in use" "$tmp/srv.log" && exit 2; sleep 0.05; done
exit 1
SH
chmod +x "$tmp/start_http.sh"
port=
for _ in 1 2 3 4 5; do
  p=$((20000 + RANDOM % 40000))
  if "$tmp/start_http.sh" "$p"; then port=$p; break; fi
  kill "$(cat "$tmp/srv.pid")" 2>/dev/null
done
[ -n "$port" ] || fail "server-everything did not start over HTTP: $(cat "$tmp/srv.log")"
# (the socket dump is filtered to the port and read again: a dump of every socket on a busy
# machine can miss one that changes under it)
local_only() { ss -ltnH "sport = :$port" | grep -q "127.0.0.1:$port "; }
wait_for local_only ||
  fail "the server does not listen on 127.0.0.1:$port only: $(ss -ltn | grep ":$port ") $(cat "$tmp/srv.log")"
# a tool that restarts the server on the same port (it forgets every session)
cat >"$tmp/restart.sh" <<SH
#!/usr/bin/env bash
old=\$(cat "$tmp/srv.pid")
kill "\$old"
for _ in \$(seq 1 600); do kill -0 "\$old" 2>/dev/null || break; sleep 0.05; done # the port freed
"$tmp/start_http.sh" $port >/dev/null && echo restarted
SH
chmod +x "$tmp/restart.sh"
cat >"$tmp/tools.json" <<JSON
{"tools": [{"name": "restart_server", "description": "restarts the MCP server", "command": ["$tmp/restart.sh"]}],
 "mcp": [{"name": "ev", "url": "http://127.0.0.1:$port/mcp", "headers": {"Authorization": "Bearer sekrit-TOKEN-4711"}, "timeout": "20s",
          "start_timeout": "30s"},
         {"name": "evs", "url": "http://127.0.0.1:$port/mcp", "timeout": "3s", "start_timeout": "30s"}]}
JSON
call() { printf '{"id": "%s", "name": "%s", "arguments": %s}' "$1" "$2" "$(jq -c -n --argjson a "$3" '$a | tojson')"; }
script "$tmp/s" "{\"tool_calls\": [$(call c1 ev::echo '{"message":"over http"}'), $(call c2 ev::get-sum '{"a":1,"b":2}'),
  $(call c3 ev::trigger-long-running-operation '{"duration":1,"steps":2}'), $(call c4 ev::get-tiny-image '{}'),
  $(call c5 ev::gzip-file-as-resource '{"data":"file:///etc/passwd"}'),
  $(call c6 ev::gzip-file-as-resource '{"data":"data:text/plain;base64,aGVsbG8=","outputType":"resource"}')]}" \
  "{\"tool_calls\": [$(call d1 evs::trigger-long-running-operation '{"duration":8,"steps":8}')]}" \
  "{\"tool_calls\": [$(call d2 evs::echo '{"message":"after the timeout"}')]}" \
  "{\"tool_calls\": [$(call r1 restart_server '{}')]}" \
  "{\"tool_calls\": [$(call e1 ev::echo '{"message":"new session"}')]}" \
  '{"content": "done"}'
run_agent "$tmp/tools.json" "$tmp/s" --journal "$tmp/journal"
[ $rc -eq 0 ] || fail "run failed ($rc): $(cat "$tmp/err")"
expect_result c1 true '^Echo: over http$'
expect_result c2 true 'sum of 1 and 2 is 3'
expect_result c3 true 'Long running operation completed'
[ "$(jq -s 'map(select(.type == "tool_progress" and .id == "c3")) | length' "$tmp/out")" -ge 2 ] \
  || fail "no progress over SSE: $(cat "$tmp/out")"
expect_result c4 true 'image/png'
# the server's own error result (isError) and an embedded binary resource, described
expect_result c5 false 'Unsupported URL protocol for file:///etc/passwd'
expect_result c6 true '^\[resource demo://resource/session/README.md.gz: application/gzip, [0-9]+ bytes, not shown\]$'
expect_result d1 false 'timed out after 3000 ms'
expect_result d2 true '^Echo: after the timeout$'
expect_result r1 true restarted
expect_result e1 true '^Echo: new session$'
[ "$(grep -c "Session initialized" "$tmp/srv.log")" -ge 1 ] || fail "no new session after the restart: $(cat "$tmp/srv.log")"
grep '"mcp"' "$tmp/journal" | tail -n1 | jq -e '[.. | objects | select(has("protocol"))] | map(.transport) | unique == ["streamable-http"]' >/dev/null \
  || fail "the journal does not record the transport"
! grep -rq "sekrit-TOKEN" "$tmp/out" "$tmp/err" "$tmp/journal" || fail "a header value leaked"
# a server that cannot be reached: the session goes on, its calls fail with a clear reason,
# without the header value
cat >"$tmp/bad.json" <<JSON
{"mcp": [{"name": "gone", "url": "http://127.0.0.1:1/mcp", "headers": {"X-Api-Key": "sekrit-TOKEN-4711"}, "start_timeout": "3s"}]}
JSON
script "$tmp/s2" "{\"tool_calls\": [$(call g1 gone::echo '{"message":"x"}')]}" '{"content": "done"}'
run_agent "$tmp/bad.json" "$tmp/s2"
[ $rc -eq 0 ] || fail "an unreachable server stopped the session ($rc): $(cat "$tmp/err")"
expect_result g1 false "^MCP server 'gone' cannot be reached over HTTP"
! grep -q "sekrit" "$tmp/out" "$tmp/err" || fail "a header value leaked into the error"
echo ok
