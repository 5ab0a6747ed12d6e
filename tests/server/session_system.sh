#!/usr/bin/env bash
# agentc serve: a session's own system prompt is session data on the server's one engine.
# With a stdio MCP server in the tool file, `POST /v1/sessions {"system": ...}` works (no
# engine is built for it), the model request carries that prompt (the loopback
# OpenAI-compatible server logs what it got) with the MCP server's tools, another session
# keeps the server's prompt, and with --db the prompt comes back from the journal after a
# kill -9 and a restart.
set -uo pipefail
agentc=$1 httpd=$2
here="$(cd "$(dirname "$0")" && pwd)"
for c in curl jq node; do command -v $c >/dev/null || { echo "SKIP: $c needed"; exit 77; }; done
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (session_system.sh:${BASH_LINENO[0]}): $*" >&2; for f in "$tmp"/*.err; do tail -n 5 "$f" >&2; done; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s

"$httpd" --port-file "$tmp/llm.port" --log "$tmp/requests" --mode calc &
pids+=("$!")
wait_for test -s "$tmp/llm.port" || fail "agentc_test_httpd did not start"
base="http://127.0.0.1:$(cat "$tmp/llm.port")/v1"
cat >"$tmp/tools.json" <<JSON
{"mcp": [{"name": "t", "command": ["node", "$here/../mcp/test_server.js", "--starts", "$tmp/starts"]}]}
JSON
run=0
start() { # start [ARGS...]: a server on the loopback model, $url set
  run=$((run + 1))
  rm -f "$tmp/port"
  AGENTC_TEST_KEY=k "$agentc" serve --provider openai --base-url "$base" --model m \
    --api-key-env AGENTC_TEST_KEY --tools "$tmp/tools.json" --system "DEFAULT-PROMPT" \
    --listen 127.0.0.1:0 --port-file "$tmp/port" "$@" 2>"$tmp/run$run.err" &
  pid=$!
  pids+=("$pid")
  wait_for test -s "$tmp/port" || fail "server did not start: $(cat "$tmp/run$run.err")"
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
turn() { # turn SESSION TEXT: posts a message and waits for the turn's end
  local n; n=$(wc -l <"$tmp/requests" 2>/dev/null || echo 0)
  j -X POST -d "{\"content\": \"$2\"}" "$url/v1/sessions/$1/messages" | jq -e '.accepted == "started"' >/dev/null \
    || fail "message to $1 not accepted"
  wait_for sh -c "[ \"\$(curl -s --max-time 5 $url/v1/sessions/$1 | jq -r .status)\" = idle ] && [ \$(wc -l <'$tmp/requests') -gt $n ]" \
    || fail "$1: the turn did not end: $(j "$url/v1/sessions/$1")"
}
# the system message and the tool names of the last model request
last_system() { tail -n1 "$tmp/requests" | jq -r '.body.messages[0] | select(.role == "system") | .content'; }
last_tools() { tail -n1 "$tmp/requests" | jq -r '[.body.tools[]?.function.name] | join(",")'; }

for db in "" "--db $tmp/s.db"; do
  : >"$tmp/requests"
  # shellcheck disable=SC2086
  start $db
  code=$(j -o "$tmp/body" -w '%{http_code}' -X POST -d '{"id": "pirate", "system": "You are PIRATE."}' "$url/v1/sessions")
  [ "$code" = 201 ] || fail "POST /v1/sessions with a system prompt ($db): $code $(cat "$tmp/body")"
  turn pirate "hello"
  [ "$(last_system)" = "You are PIRATE." ] || fail "the request's system prompt ($db): $(last_system)"
  last_tools | grep -Eq "(^|,)t(::|__)echo(,|$)" || fail "the MCP server's tools not offered ($db): $(last_tools)"
  j -X POST -d '{"id": "plain"}' "$url/v1/sessions" | jq -e '.id == "plain"' >/dev/null || fail "create plain"
  turn plain "hi"
  [ "$(last_system)" = "DEFAULT-PROMPT" ] || fail "the server's prompt ($db): $(last_system)"
  [ "$(wc -l <"$tmp/starts")" -le "$run" ] || fail "the MCP server was started per session: $(wc -l <"$tmp/starts")"
  if [ -n "$db" ]; then
    kill -9 "$pid"; wait "$pid" 2>/dev/null
    # shellcheck disable=SC2086
    start $db
    turn pirate "again"
    [ "$(last_system)" = "You are PIRATE." ] || fail "the prompt after a restart: $(last_system)"
    n=$(jq -s '[.[] | select(.body.messages[0].content == "You are PIRATE.")] | length' "$tmp/requests")
    [ "$n" -ge 2 ] || fail "expected the restored session's requests with its prompt: $n"
  fi
  kill -TERM "$pid"; wait "$pid" || fail "graceful stop ($db)"
done
echo ok
