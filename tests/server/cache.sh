#!/usr/bin/env bash
# agentc serve shares an engine-scoped result cache between its sessions: two sessions of one
# agent call a tool declared "cache": {"scope": "engine"}; the tool (which appends to a ledger
# and answers with the id of the session it ran for) runs once, and the second session's next
# request carries the first session's result. A session-scoped tool runs once per session.
set -uo pipefail
agentc=$1 httpd=$2
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (cache.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 5 "$tmp"/*.err >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
req() { # req METHOD PATH [BODY]: prints the status, the body in $tmp/body
  curl -s --max-time 10 -o "$tmp/body" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data-binary "$3"} "$url$2"
}
expect() { # expect STATUS METHOD PATH [BODY]
  local want=$1; shift
  local got; got=$(req "$@")
  [ "$got" = "$want" ] || fail "$* -> $got, expected $want: $(head -c 300 "$tmp/body")"
}
idle() { req GET "/v1/sessions/$1" >/dev/null && jq -e '.status == "idle" and .last_turn.outcome == "completed"' "$tmp/body" >/dev/null; }
cat >"$tmp/tools.json" <<JSON
{"tools": [
 {"name": "shared", "description": "d", "idempotent": true, "cache": {"ttl": "10m", "scope": "engine"},
  "command": ["sh", "-c", "cat >/dev/null; echo \"shared \$AGENTC_SESSION_ID\" >>'$tmp/ledger'; echo \"shared-for-\$AGENTC_SESSION_ID\""]},
 {"name": "mine", "description": "d", "idempotent": true, "cache": {"ttl": "10m"},
  "command": ["sh", "-c", "cat >/dev/null; echo \"mine \$AGENTC_SESSION_ID\" >>'$tmp/ledger'; echo \"mine-for-\$AGENTC_SESSION_ID\""]}
]}
JSON
mkdir -p "$tmp/model"
calls='data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"k1","type":"function","function":{"name":"shared","arguments":"{}"}},{"index":1,"id":"k2","type":"function","function":{"name":"mine","arguments":"{}"}}]},"finish_reason":null}]}'
done_='data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}'
answer='data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}'
stop='data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
for n in 1 3; do printf '%s\n\n' "$calls" "$done_" 'data: [DONE]' >"$tmp/model/0$n.sse"; done
for n in 2 4; do printf '%s\n\n' "$answer" "$stop" 'data: [DONE]' >"$tmp/model/0$n.sse"; done
"$httpd" --port-file "$tmp/model.port" --script "$tmp/model" --log "$tmp/requests" &
pids+=("$!")
wait_for test -s "$tmp/model.port" || fail "the model server did not start"
AGENTC_TEST_KEY=sk-test "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/a.port" \
  --base-url "http://127.0.0.1:$(cat "$tmp/model.port")/v1" --model m --api-key-env AGENTC_TEST_KEY \
  --tools "$tmp/tools.json" 2>"$tmp/a.err" &
pids+=("$!")
wait_for test -s "$tmp/a.port" || fail "the server did not start"
url="http://127.0.0.1:$(cat "$tmp/a.port")"
for s in s1 s2; do
  expect 201 POST /v1/sessions "{\"id\": \"$s\"}"
  expect 202 POST "/v1/sessions/$s/messages" '{"content": "go"}'
  wait_for idle "$s" || fail "session $s did not finish: $(cat "$tmp/body")"
done
[ "$(grep -c '^shared' "$tmp/ledger")" = 1 ] || fail "the engine-scoped tool ran $(grep -c '^shared' "$tmp/ledger") times"
[ "$(grep -c '^mine' "$tmp/ledger")" = 2 ] || fail "the session-scoped tool ran $(grep -c '^mine' "$tmp/ledger") times"
# the second session's last request: the shared result is the first session's, its own is its own
tail -n1 "$tmp/requests" | jq -e '[.body.messages[] | select(.role == "tool") | .content]
  | (length == 2) and (.[0] | test("^shared-for-(.*/)?s1\n$")) and (.[1] | test("^mine-for-(.*/)?s2\n$"))' >/dev/null || fail "s2's request: $(tail -n1 "$tmp/requests" | head -c 2000)"
echo ok
