#!/usr/bin/env bash
# The README's offline examples run as written: the serve example (its script, the server, the
# stream and the message; only ./build/agentc and the port replaced, and a wait for the port
# before the first request), and the durable sessions' lines (against a loopback model server
# named by the environment, OPENAI_BASE_URL, AGENTC_MODEL and OPENAI_API_KEY, no option added);
# every route docs/serve.md's API table shows is one the server has; the first spec of
# docs/spec-language.md checks, generates and draws; the inline commands on it, the demo's
# journal and the shipped spec run; the tool, MCP, toolkit and agents files the docs show pass
# agentc check --tools.
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
wait_port="for _ in \$(seq 1 300); do curl -s -o /dev/null localhost:$port/healthz \&\& break; sleep 0.1; done"
sed -i -e "s|\./build/agentc|\"$agentc\"|; s|8080|$port|g" -e "/--db sessions.db &\$/a $wait_port" serve.sh
cat >>serve.sh <<'EOF'
for _ in $(seq 1 300); do grep -q 'Ask me what 17' out.sse 2>/dev/null && break; sleep 0.1; done
kill $(jobs -p); wait
EOF
sed -i 's|^curl -N \(.*\) &$|curl -sN \1 >out.sse \&|' serve.sh
sed -i "1i trap 'kill \$(jobs -p) 2>/dev/null' EXIT" serve.sh # the server and the stream, however it ends
timeout 60 bash serve.sh >out 2>err || fail "the serve example: exit $?: $(cat err out)"
jq -e '.id == "s1"' <(head -n1 out) >/dev/null || fail "POST /v1/sessions: $(cat out)"
grep -q 'Hello from a scripted agent' out.sse || fail "the stream: $(cat out.sse)"
[ -s sessions.db ] || fail "no store made"

# ---- every route of docs/serve.md's API table is one the server has --------------------------------
# (any answer but "no such route" and 405; the session's own routes on one session, DELETE last)
# a row's routes, one a line: `POST /a/pause`, `/resume` is POST /a/pause and POST /a/resume
grep -oE '^\| `(GET|POST|DELETE) /[^`]*`(, `(GET |POST |DELETE )?/[^`]*`)*' "${readme%/README.md}/docs/serve.md" \
  | sed -E 's/^\| `//; s/`$//; s/`, `/\n/g' | awk '
    $1 ~ /^(GET|POST|DELETE)$/ { m = $1; p = $2; print m, p; next }
    { q = p; sub(/\/[^\/]*$/, "", q); print m, q $1 }' >routes.txt
[ "$(wc -l <routes.txt)" -ge 15 ] || fail "docs/serve.md's API table: $(cat routes.txt)"
"$agentc" serve --provider script --script turns.jsonl --listen 127.0.0.1:0 --port-file port.txt \
  2>serve.err &
serve_pid=$!
trap 'kill "$serve_pid" 2>/dev/null; cleanup' EXIT
for _ in $(seq 1 600); do [ -s port.txt ] && break; sleep 0.05; done
[ -s port.txt ] || fail "serve did not start: $(cat serve.err)"
api="http://127.0.0.1:$(cat port.txt)"
curl -s -o /dev/null -X POST "$api/v1/sessions" -H 'Content-Type: application/json' -d '{"id": "r1"}'
n=0
while read -r method p; do
  p=$(sed -E 's/\{id\}|\bID\b/r1/; s/\{name\}/approve/; s/=N\b/=1/; s/=NAME/=default/; s/after=ID/after=r1/' <<<"$p")
  [ "$method" = DELETE ] && continue
  code=$(curl -s -m 2 -o body -w '%{http_code}' -X "$method" "$api$p" -H 'Content-Type: application/json' \
    $([ "$method" = POST ] && echo -d '{}'))
  [[ $p == */events && $method == GET ]] && [ "$code" = 000 ] && code=200 # a stream: cut at 2 s
  { [ "$code" != 405 ] && ! grep -q 'no such route' body; } || fail "docs/serve.md: $method $p: $code $(cat body)"
  n=$((n + 1))
done <routes.txt
code=$(curl -s -o body -w '%{http_code}' -X DELETE "$api/v1/sessions/r1")
[ "$code" = 200 ] || fail "DELETE /v1/sessions/r1: $code $(cat body)"
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null
[ "$n" -ge 20 ] || fail "only $n routes tried"

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

# ---- the spec language's first spec, and the inline commands on the demo's journal and specs ------
mkdir inline && cd inline || fail "cd"
ln -s "${readme%/README.md}/spec" spec
sed -n '/^## A first spec$/,/^`agentc diagram/p' "${readme%/README.md}/docs/spec-language.md" \
  | sed -n '/^```$/,/^```$/p' | sed '1d;$d' >door.fsm
grep -q '^machine door' door.fsm || fail "no first spec in docs/spec-language.md"
"$agentc" demo >/dev/null 2>&1 || fail "agentc demo"
grep -ohE '`(\./build/)?agentc (check|gen|diagram|replay|coverage|demo) [^`]*(door\.fsm|spec/agent\.fsm|agentc-demo\.journal)[^`]*`' \
  "$readme" "${readme%/README.md}"/docs/*.md | tr -d '`' | sed 's|^\./build/||' | sort -u >inline.sh
[ "$(wc -l <inline.sh)" -ge 5 ] || fail "the inline commands: $(cat inline.sh)"
grep -q 'door.fsm' inline.sh || fail "no command on door.fsm: $(cat inline.sh)"
while IFS= read -r line; do
  line=${line//DIR/gen_out}
  mkdir -p gen_out
  eval "$line" >out 2>err || fail "'$line': exit $?: $(cat err)"
done <inline.sh
"$agentc" check door.fsm >out 2>err && fail "agentc check door.fsm passed without the door's handlers"
[ "$(grep -c 'has no handler of that name' err)" = 3 ] || fail "check door.fsm: $(cat err)"
[ -s gen_out/door_fsm.c ] || [ -z "$(grep ' gen ' inline.sh)" ] || fail "gen wrote no door_fsm.c"

# ---- every tool file, MCP list, toolkit file and agents file the docs show passes check --tools ----
n=0
for doc in "$readme" "${readme%/README.md}"/docs/*.md; do
  awk '/^```json$/ { inb = 1; n++; next } /^```/ { inb = 0 } inb { print > ("block" n ".json") }' "$doc"
  for b in block*.json; do
    [ -e "$b" ] || continue
    if head -c 20 "$b" | grep -qE '^\{"(tools|mcp|toolkits|agents)": \[' &&
      ! grep -q '\.\.\.' "$b"; then # a whole file, not a sketch
      "$agentc" check --tools "$b" >out 2>err || fail "${doc##*/}: check --tools of $(head -c 80 "$b"): $(cat out err)"
      n=$((n + 1))
    fi
    rm -f "$b"
  done
done
[ "$n" -ge 8 ] || fail "only $n files shown in the docs"
echo ok
