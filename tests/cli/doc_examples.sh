#!/usr/bin/env bash
# The README's offline examples run as written: the serve example (its script, the server, the
# stream and the message; only ./build/agentc and the port replaced, and a wait for the port
# before the first request), and the durable sessions' lines (against a loopback model server
# named by the environment, OPENAI_BASE_URL, AGENTC_MODEL and OPENAI_API_KEY, no option added).
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
need curl
readme="$PWD/README.md"
cd "$tmp" || fail "cd"

# ---- the serve example ------------------------------------------------------------------------
sed -n "/^cat >turns.jsonl <<'EOF'\$/,/^\`\`\`\$/p" "$readme" | sed '$d' >serve.sh
grep -q '^./build/agentc serve ' serve.sh || fail "no serve example in the README: $(cat serve.sh)"
port=$((20000 + $$ % 20000)) # one nothing listens on
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
wait_port="for _ in \$(seq 1 100); do curl -s -o /dev/null localhost:$port/healthz \&\& break; sleep 0.1; done"
sed -i -e "s|\./build/agentc|\"$agentc\"|; s|8080|$port|g" -e "/--db sessions.db &\$/a $wait_port" serve.sh
cat >>serve.sh <<'EOF'
for _ in $(seq 1 100); do grep -q 'Ask me what 17' out.sse 2>/dev/null && break; sleep 0.1; done
kill $(jobs -p); wait
EOF
sed -i 's|^curl -N \(.*\) &$|curl -sN \1 >out.sse \&|' serve.sh
timeout 60 bash serve.sh >out 2>err || fail "the serve example: exit $?: $(cat err out)"
jq -e '.id == "s1"' <(head -n1 out) >/dev/null || fail "POST /v1/sessions: $(cat out)"
grep -q 'Hello from a scripted agent' out.sse || fail "the stream: $(cat out.sse)"
[ -s sessions.db ] || fail "no store made"

# ---- the durable sessions' lines ----------------------------------------------------------------
start_server --mode calc
export OPENAI_BASE_URL="$base" AGENTC_MODEL=m OPENAI_API_KEY=sk-test-$$ AGENTC_DB="$tmp/state.db"
sed -n '/^```sh$/,/^```$/p' "$readme" | awk '/^agentc run --session chat/,/^```$/' | sed '$d' \
  | sed 's/ *# .*$//' >sessions.sh
[ "$(wc -l <sessions.sh)" -ge 6 ] || fail "the durable sessions' lines: $(cat sessions.sh)"
bin=$agentc
agentc() { timeout 30 "$bin" "$@"; }
while IFS= read -r line; do
  eval "$line" >out 2>err || fail "'$line': exit $?: $(cat err)"
done <sessions.sh
agentc=$bin
"$agentc" sessions show chat --json >show || fail "show chat"
jq -e '.status == "ended" and .session.states == [["session", "Closed"]]' show >/dev/null \
  || fail "chat not closed: $(head -c 400 show)"
[ -s chat.jsonl ] || fail "no export"
"$agentc" sessions show retry >/dev/null || fail "no fork named retry"
echo ok
