#!/usr/bin/env bash
# agentc serve's session view carries the session's State: a tool call writes its result to
# †state.user through _outputPath, and GET /v1/sessions/{id} shows it under "state".
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL (state_view.sh:${BASH_LINENO[0]}): $*" >&2; cat "$tmp/err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
cat >"$tmp/tools.json" <<'JSON'
{"state": {"initial": {"user": null}},
 "tools": [{"name": "fetch_user", "description": "Fetch the user",
            "parameters": {"type": "object", "properties": {}},
            "command": ["sh", "-c", "echo '{\"name\": \"Ada\"}'"]}]}
JSON
cat >"$tmp/script" <<'JSONL'
{"tool_calls": [{"id": "c1", "name": "fetch_user", "arguments": "{\"_outputPath\": \"†state.user\"}"}]}
{"content": "fetched"}
JSONL
"$agentc" serve --provider script --script "$tmp/script" --tools "$tmp/tools.json" \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
wait_for test -s "$tmp/port" || fail "the server did not start"
url="http://127.0.0.1:$(cat "$tmp/port")"
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
idle() { j "$url/v1/sessions/s1" | jq -e '.states.session == "Idle" and .answer == "fetched"' >/dev/null; }
j -X POST -d '{"id": "s1"}' "$url/v1/sessions" >/dev/null
j -X POST -d '{"content": "who is it?"}' "$url/v1/sessions/s1/messages" >/dev/null
wait_for idle || fail "the turn did not finish: $(j "$url/v1/sessions/s1")"
j "$url/v1/sessions/s1" >"$tmp/s.json"
jq -e '.state == {"user": {"name": "Ada"}}' "$tmp/s.json" >/dev/null || fail "state: $(jq -c .state "$tmp/s.json")"
kill -TERM "$pid"; wait "$pid" || fail "exit status"
pid=
echo "state_view: all checks passed"
