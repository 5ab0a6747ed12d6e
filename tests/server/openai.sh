#!/usr/bin/env bash
# agentc serve with the official `openai` npm package as the client (pinned; installed
# under the build directory by tests/server/npm_install.sh).
set -uo pipefail
agentc=$1 modules=$2
dir=$(cd "$(dirname "$0")" && pwd)
modules=$(mkdir -p "$modules" && cd "$modules" && pwd)
mod="$modules/node_modules/openai"
if [ ! -f "$mod/index.mjs" ]; then
  bash "$dir/npm_install.sh" "$modules" || { echo "SKIP: the openai npm package cannot be installed"; exit 77; }
fi
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL (openai.sh): $*" >&2; cat "$tmp/err" >&2; exit 1; }
echo '{"content": "Hello from the agentc agent, streamed in small pieces."}' >"$tmp/script"
echo "tok-openai-client-0123456789 client" >"$tmp/tokens"
"$agentc" serve --provider script --script "$tmp/script" --script-delay-ms 5 --tokens "$tmp/tokens" \
  --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || fail "the server did not start"
OPENAI_MODULE="$mod" timeout 60 node "$dir/openai_client.mjs" "http://127.0.0.1:$(cat "$tmp/port")/v1" \
  tok-openai-client-0123456789 "Hello from the agentc agent, streamed in small pieces." || fail "the openai client failed"
kill -TERM $pid; wait $pid || fail "exit status"
pid=
# a model call streams HALF-ANSWER, fails (503, retryable) and is retried: streamed or not,
# what the client assembles is the final answer alone
echo '{"error": {"status": 503, "message": "unavailable", "retryable": true, "partial": "HALF-ANSWER "}}' >"$tmp/retry"
echo '{"content": "FULL ANSWER"}' >>"$tmp/retry"
rm -f "$tmp/port"
"$agentc" serve --provider script --script "$tmp/retry" --script-delay-ms 5 --tokens "$tmp/tokens" \
  --param backoff_initial=50ms --listen 127.0.0.1:0 --port-file "$tmp/port" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 600); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || fail "the second server did not start"
OPENAI_MODULE="$mod" RETRIED=1 timeout 60 node "$dir/openai_client.mjs" "http://127.0.0.1:$(cat "$tmp/port")/v1" \
  tok-openai-client-0123456789 "FULL ANSWER" || fail "the openai client failed (a retried call)"
kill -TERM $pid; wait $pid || fail "exit status"
pid=
