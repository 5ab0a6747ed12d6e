#!/usr/bin/env bash
# A stored session whose tool file declares an MCP server (its env value a secret the store
# never keeps): the next turn with no options starts the server from the session's stored
# agent (the env value read again from the tool file); a fork at the end of turn 1 (its
# engine's MCP server started on a loop) goes on with it, calling it again.
. "$(dirname "$0")/lib.sh"
export T_SECRET="mcp-secret-$$"
cat >"$tmp/tools.json" <<JSON
{"mcp": [{"name": "t", "command": ["node", "$test_server"], "env": {"T_SECRET": "$T_SECRET"},
          "timeout": "20s", "start_timeout": "30s"}]}
JSON
call() { printf '{"id": "%s", "name": "%s", "arguments": %s}' "$1" "$2" "$(jq -c -n --argjson a "$3" '$a | tojson')"; }
script "$tmp/s" "{\"tool_calls\": [$(call e1 t::echo '{"text":"one"}')]}" '{"content": "turn one"}' \
  "{\"tool_calls\": [$(call e2 t::echo '{"text":"two"}')]}" '{"content": "turn two"}'
export AGENTC_DB="$tmp/sessions.db"
timeout 60 "$agentc" run --provider script --script "$tmp/s" --tools "$tmp/tools.json" --session m --jsonl one \
  >"$tmp/out" 2>"$tmp/err" || fail "turn 1: $(cat "$tmp/err")"
expect_result e1 true '^one$'
! grep -q "$T_SECRET" "$AGENTC_DB" || fail "the tool file's env value reached the store"
timeout 60 "$agentc" run --session m --jsonl two >"$tmp/out" 2>"$tmp/err" || fail "turn 2 with no options: $(cat "$tmp/err")"
expect_result e2 true '^two$'
timeout 60 "$agentc" sessions fork m --at 1 --as m-fork >"$tmp/fork" 2>"$tmp/err" || fail "fork: $(cat "$tmp/err")"
[ "$(cat "$tmp/fork")" = m-fork ] || fail "fork printed $(cat "$tmp/fork")"
timeout 60 "$agentc" run --session m-fork --jsonl "two again" >"$tmp/out" 2>"$tmp/err" \
  || fail "the fork's next turn: $(cat "$tmp/err")"
expect_result e2 true '^two$'
tail -n1 "$tmp/out" | jq -e '.answer == "turn two"' >/dev/null || fail "the fork's answer: $(tail -n1 "$tmp/out")"
echo ok
