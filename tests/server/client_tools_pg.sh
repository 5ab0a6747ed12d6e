#!/usr/bin/env bash
# client_tools_pg.sh AGENTC URI CLUSTER_DIR PORT: the OpenAI-compatible front's client tools on
# a PostgreSQL store. A kept session is made without waiting (its row made with its first
# commit); its client's follow-up answers its call; once settled it is unloaded, and a second
# follow-up naming that call loads it without waiting on the loop (its lease and rows read
# ahead, the request suspended meanwhile) and is refused as answered already (409), as while it
# is loaded. No statement was waited for on the loop.
set -uo pipefail
agentc=$1 uri=$2 dir=$3 port=$4
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (client_tools_pg.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 8 "$tmp/err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
sql() { PGOPTIONS='-c client_min_messages=warning' "$psql" -X -q -t -A -h "$dir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
sql "DROP SCHEMA IF EXISTS ctools CASCADE" || fail "psql"
printf '%s\n' '{"content": "Let me look.", "tool_calls": [{"id": "c1", "name": "lookup", "arguments": "{\"q\": \"weather\"}"}]}' \
  '{"content": "The lookup said sunny."}' >"$tmp/script"
AGENTC_STORE_BLOCKING_LOG=1 "$agentc" serve --db "$uri?schema=ctools" --provider script --script "$tmp/script" \
  --client-tool-timeout 30 --unload-after-ms 200 --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
wait_for test -s "$tmp/port" || fail "the worker did not start"
url=http://127.0.0.1:$(cat "$tmp/port")
chat() { curl -s --max-time 20 -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$1" "$url/v1/chat/completions"; }
TOOLS='[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]'
[ "$(chat "{\"model\": \"agentc\", \"tools\": $TOOLS, \"messages\": [{\"role\": \"user\", \"content\": \"weather?\"}]}")" = 200 ] \
  || fail "ask: $(cat "$tmp/body")"
calls=$(jq -c '.choices[0].message.tool_calls' "$tmp/body") sid=$(jq -r .id "$tmp/body")
[ "$(jq length <<<"$calls")" = 1 ] || fail "no client call: $(cat "$tmp/body")"
follow=$(jq -cn --argjson calls "$calls" --argjson tools "$TOOLS" '{model: "agentc", tools: $tools, messages:
  [{role: "user", content: "weather?"}, {role: "assistant", content: "Let me look.", tool_calls: $calls},
   {role: "tool", tool_call_id: $calls[0].id, content: "sunny"}]}')
[ "$(chat "$follow")" = 200 ] && jq -e --arg s "$sid" '.id == $s and .choices[0].message.content == "The lookup said sunny."' "$tmp/body" >/dev/null \
  || fail "the follow-up: $(cat "$tmp/body")"
at_rest() { [ "$(sql "SELECT at_rest FROM ctools.sessions WHERE id = 'local/$sid'")" = 1 ]; }
wait_for at_rest || fail "the session is not stored at rest: $(sql "SELECT id, at_rest FROM ctools.sessions")"
sleep 1.5 # settled: unloaded after --unload-after-ms
code=$(chat "$follow")
[ "$code" = 409 ] && jq -e '.error.code == "already_answered"' "$tmp/body" >/dev/null \
  || fail "the second follow-up, of the unloaded session: $code $(cat "$tmp/body")"
waits=$(grep -c "the loop waited for the store" "$tmp/err")
[ "$waits" = 0 ] || fail "the loop waited for the store $waits times: $(grep 'loop waited' "$tmp/err")"
kill -TERM "$pid"
wait "$pid" || fail "the worker's exit status"
pid=
sql "DROP SCHEMA IF EXISTS ctools CASCADE"
echo "client_tools_pg: ok"
