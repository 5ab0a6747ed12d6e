#!/usr/bin/env bash
# The State through the CLI and a loopback OpenAI-compatible server: a turn of
# two calls where the second reads what the first writes (†state.user.name),
# the State in the second request (a last system message), in the --jsonl done
# line, in the journal (each write with its path, value and call id), and
# rebuilt byte for byte by `agentc replay --check`; a tool file whose initial
# State its own schema refuses stops at start (exit 3); a stored session keeps
# its State through kill -9 (resume) and run --session, and sessions show has it.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
mkdir -p "$tmp/script"
D=$(printf '\xe2\x80\xa0')
args1=$(jq -cn --arg p "${D}state.user" '{_outputPath: $p} | tojson')
args2=$(jq -cn --arg n "${D}state.user.name" --arg p "${D}state.greeting" '{name: $n, _outputPath: $p} | tojson')
{
  echo "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"t1\",\"type\":\"function\",\"function\":{\"name\":\"fetch_user\",\"arguments\":$args1}},{\"index\":1,\"id\":\"t2\",\"type\":\"function\",\"function\":{\"name\":\"greet\",\"arguments\":$args2}}]}}]}"
  echo
  echo 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}'
  echo
  echo 'data: [DONE]'
  echo
} >"$tmp/script/01.sse"
printf '%s\n\n' 'data: {"choices":[{"index":0,"delta":{"content":"greeted"}}]}' \
  'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}' 'data: [DONE]' >"$tmp/script/02.sse"
cat >"$tmp/tools.json" <<'JSON'
{"state": {"initial": {"log": []},
           "schema": {"type": "object", "properties": {"user": {"type": "object", "required": ["name"]}}}},
 "tools": [
  {"name": "fetch_user", "description": "the user", "command": ["sh", "-c", "echo '{\"name\":\"Ada\",\"id\":7}'"]},
  {"name": "greet", "description": "greets", "parameters": {"type": "object",
     "properties": {"name": {"type": "string"}}, "required": ["name"]},
   "command": ["sh", "-c", "jq -c '{hello: .name}'"]}]}
JSON
start_server --script "$tmp/script"
OPENAI_API_KEY=sk-test "$agentc" run --base-url "$base" --model m --tools "$tmp/tools.json" \
  --journal "$tmp/j.jsonl" --jsonl "greet the user" >"$tmp/out" 2>"$tmp/err" \
  || fail "run exited $?: $(cat "$tmp/err")"
every_line_json "$tmp/out"
want='{"log":[],"user":{"name":"Ada","id":7},"greeting":{"hello":"Ada"}}'
done_state=$(jq -c 'select(.type == "done") | .state' "$tmp/out")
[ "$done_state" = "$want" ] || fail "done state: $done_state"
has_line "$tmp/out" '.type == "tool_result" and .id == "t2" and .ok and .content == "{\"hello\":\"Ada\"}\n"' \
  || fail "greet result: $(cat "$tmp/out")"
# the second request carries the State as its last message; the first carries the initial one
[ "$(wc -l <"$tmp/requests")" -eq 2 ] || fail "requests: $(wc -l <"$tmp/requests")"
last1=$(sed -n 1p "$tmp/requests" | jq -r '.body | .messages[-1] | .role + ": " + .content')
last2=$(sed -n 2p "$tmp/requests" | jq -r '.body | .messages[-1] | .role + ": " + .content')
case "$last1" in system:*'Current State:'*'{"log":[]}') ;; *) fail "first request: $last1" ;; esac
case "$last2" in system:*"$want") ;; *) fail "second request: $last2" ;; esac
# the journal: each write with its path, value and call
jq -e -s --arg p "${D}state.user" 'map(select(.ev == "tool.completed") | .data) |
  any(.id == "t1" and .state_writes == [{"path": $p, "value": {"name": "Ada", "id": 7}}])' \
  "$tmp/j.jsonl" >/dev/null || fail "journal writes: $(grep state_writes "$tmp/j.jsonl")"
# replay rebuilds the same State, byte for byte
"$agentc" replay "$tmp/j.jsonl" --check >"$tmp/replay" 2>&1 || fail "replay: $(cat "$tmp/replay")"
replayed=$(sed -n 's/^  state    //p' "$tmp/replay")
[ "$replayed" = "$want" ] || fail "replayed state: $replayed"
# state_in_context=0: no State in the request
: >"$tmp/requests"
OPENAI_API_KEY=sk-test "$agentc" run --base-url "$base" --model m --tools "$tmp/tools.json" \
  --param state_in_context=0 "again" >/dev/null 2>"$tmp/err" || fail "run 2: $(cat "$tmp/err")"
grep -q 'Current State' "$tmp/requests" && fail "the State was sent with state_in_context=0"
# a refused initial State: exit 3 before anything runs
echo '{"state": {"initial": {"user": 1}, "schema": {"properties": {"user": {"type": "object"}}}}, "tools": []}' \
  >"$tmp/bad.json"
echo '{"content": "never"}' >"$tmp/s.jsonl"
"$agentc" run --provider script --script "$tmp/s.jsonl" --tools "$tmp/bad.json" hi >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 3 ] || fail "refused initial State: exit $rc"
grep -q 'state: the schema refuses the initial State' "$tmp/err" || fail "message: $(cat "$tmp/err")"
# a stored session killed with SIGKILL mid-turn keeps the State written before the kill
# (resume), and a later `run --session` reads it
cat >"$tmp/ktools.json" <<JSON
{"state": {"initial": {}},
 "tools": [
  {"name": "fetch_user", "description": "u", "command": ["sh", "-c", "echo '{\"name\":\"Ada\"}'"]},
  {"name": "slow", "description": "s", "command": ["sh", "-c", "touch '$tmp/slow.started'; sleep 30"]},
  {"name": "greet", "description": "g", "command": ["sh", "-c", "cat"]}]}
JSON
{
  echo "{\"tool_calls\":[{\"id\":\"k1\",\"name\":\"fetch_user\",\"arguments\":\"{\\\"_outputPath\\\":\\\"${D}state.user\\\"}\"}]}"
  echo '{"tool_calls":[{"id":"k2","name":"slow","arguments":"{}"}]}'
  echo '{"content":"after"}'
  echo "{\"tool_calls\":[{\"id\":\"k3\",\"name\":\"greet\",\"arguments\":\"{\\\"name\\\":\\\"${D}state.user.name\\\",\\\"_outputPath\\\":\\\"${D}state.greeted\\\"}\"}]}"
  echo '{"content":"hi"}'
} >"$tmp/k.jsonl"
"$agentc" run --provider script --script "$tmp/k.jsonl" --tools "$tmp/ktools.json" --session ks \
  --db "$tmp/db" --jsonl go >"$tmp/k1" 2>&1 &
kpid=$!
for _ in $(seq 1 600); do [ -e "$tmp/slow.started" ] && break; sleep 0.05; done
[ -e "$tmp/slow.started" ] || fail "the slow tool did not start: $(cat "$tmp/k1")"
kill -9 $kpid
wait $kpid 2>/dev/null
"$agentc" resume ks --db "$tmp/db" --provider script --script "$tmp/k.jsonl" --tools "$tmp/ktools.json" \
  --jsonl >"$tmp/k2" 2>&1 || fail "resume: $(cat "$tmp/k2")"
[ "$(jq -c 'select(.type == "done") | .state' "$tmp/k2")" = '{"user":{"name":"Ada"}}' ] \
  || fail "State after kill -9: $(cat "$tmp/k2")"
"$agentc" run --provider script --script "$tmp/k.jsonl" --tools "$tmp/ktools.json" --session ks \
  --db "$tmp/db" --jsonl greet >"$tmp/k3" 2>&1 || fail "run --session: $(cat "$tmp/k3")"
[ "$(jq -c 'select(.type == "done") | .state' "$tmp/k3")" = '{"user":{"name":"Ada"},"greeted":{"name":"Ada"}}' ] \
  || fail "State after run --session: $(cat "$tmp/k3")"
"$agentc" sessions show ks --db "$tmp/db" --json | jq -e '.session.state.greeted.name == "Ada"' >/dev/null \
  || fail "sessions show: $("$agentc" sessions show ks --db "$tmp/db" --json)"
echo "state: ok"
