#!/usr/bin/env bash
# pg_copy.sh AGENTC URI CLUSTER_DIR PORT: `agentc store copy` both ways between SQLite and PostgreSQL, on
# sessions with tool calls (a toolkit's states and context), the State written by tools, a
# compacted context, and a fork (a kept snapshot, a note): `sessions export` of each copy
# equals the original's byte for byte and `replay --check` passes on it; a session the
# destination has is refused without --force (nothing copied) and replaced with it; the
# URI's password is in no output.
set -uo pipefail
agentc=$1 uri=$2 dir=$3 port=$4
pw=agentc-test-pw
command -v jq >/dev/null || { echo "SKIP: jq needed"; exit 77; }
tmp=$(mktemp -d)
trap 'sql "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
fail() { echo "FAIL (pg_copy.sh:${BASH_LINENO[0]}): $*" >&2; exit 1; }
sq="$tmp/a.db" sq2="$tmp/b.db"
schema=copy_$$
pg="$uri?schema=$schema"
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
sql() { "$psql" -X -q -t -A -h "$dir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
D=$(printf '\xe2\x80\xa0')

# a toolkit's states and context, over two runs of one session
plane="$PWD/examples/toolkits/plane.json"
cat >"$tmp/kit.jsonl" <<'J'
{"tool_calls": [{"id": "a1", "name": "plane__login", "arguments": "{}"}]}
{"content": "logged in"}
{"tool_calls": [{"id": "b1", "name": "plane__select_project", "arguments": "{\"project\": \"beta\"}"}]}
{"content": "selected"}
J
for p in "log in" "select beta"; do
  "$agentc" run --db "$sq" --session kit --provider script --script "$tmp/kit.jsonl" \
    --tools "$plane" "$p" >/dev/null 2>"$tmp/err" || fail "kit run: $(cat "$tmp/err")"
done
# the State written by two tools in one turn
args1=$(jq -cn --arg p "${D}state.user" '{_outputPath: $p} | tojson')
args2=$(jq -cn --arg n "${D}state.user.name" --arg p "${D}state.greeting" '{name: $n, _outputPath: $p} | tojson')
cat >"$tmp/state.json" <<'JSON'
{"state": {"initial": {"log": []}},
 "tools": [
  {"name": "fetch_user", "description": "the user", "command": ["sh", "-c", "echo '{\"name\":\"Ada\",\"id\":7}'"]},
  {"name": "greet", "description": "greets", "parameters": {"type": "object",
     "properties": {"name": {"type": "string"}}, "required": ["name"]},
   "command": ["sh", "-c", "jq -c '{hello: .name}'"]}]}
JSON
{
  echo "{\"tool_calls\": [{\"id\": \"t1\", \"name\": \"fetch_user\", \"arguments\": $args1}, {\"id\": \"t2\", \"name\": \"greet\", \"arguments\": $args2}]}"
  echo '{"content": "greeted"}'
} >"$tmp/state.jsonl"
"$agentc" run --db "$sq" --session st --provider script --script "$tmp/state.jsonl" \
  --tools "$tmp/state.json" "greet the user" >/dev/null 2>"$tmp/err" || fail "state run: $(cat "$tmp/err")"
# a context compacted in its second turn
call() { jq -cn --arg id "$1" --arg e "$2" '{id: $id, name: "calculator", arguments: ({expression: $e} | tojson)}'; }
{
  echo "{\"content\": \"let me compute\", \"tool_calls\": [$(call c1 '6 * 7'), $(call c2 '1 + 1')]}"
  echo '{"content": "the first answer is 42, told in a few words"}'
  echo '{"content": "the second answer, after the context was compacted"}'
} >"$tmp/cmp.jsonl"
for p in "compute 6 * 7 and 1 + 1" "and now?"; do
  "$agentc" run --db "$sq" --session cmp --provider script --script "$tmp/cmp.jsonl" \
    --tools builtin:calculator --param compact_threshold=60 --param compaction=clear_tool_results \
    --param compaction_keep=1 "$p" >/dev/null 2>"$tmp/err" || fail "cmp run: $(cat "$tmp/err")"
done
"$agentc" sessions export cmp --db "$sq" >"$tmp/cmp.export" || fail "export cmp"
grep -q '"ev":"compaction.done"' "$tmp/cmp.export" || fail "no compaction in cmp"
# a fork: a kept snapshot and a note
"$agentc" sessions fork kit --at 1 --as kit2 --db "$sq" >/dev/null 2>"$tmp/err" || fail "fork: $(cat "$tmp/err")"
ids="kit st cmp kit2"

same() { # same STORE_A STORE_B: every session exports alike, and the copy replays
  for id in $ids; do
    "$agentc" sessions export "$id" --db "$1" -o "$tmp/x.$id.jsonl" --force 2>"$tmp/err" || fail "export $id from $1: $(cat "$tmp/err")"
    "$agentc" sessions export "$id" --db "$2" -o "$tmp/y.$id.jsonl" --force 2>"$tmp/err" || fail "export $id: $(cat "$tmp/err")"
    cmp -s "$tmp/x.$id.jsonl" "$tmp/y.$id.jsonl" || fail "$id differs: $(diff "$tmp/x.$id.jsonl" "$tmp/y.$id.jsonl" | head -5)"
    "$agentc" replay "$tmp/y.$id.jsonl" --check >"$tmp/replay" 2>&1 || fail "replay --check $id: $(tail -3 "$tmp/replay")"
  done
}

# SQLite -> PostgreSQL
"$agentc" store copy "$sq" "$pg" >"$tmp/out" 2>"$tmp/err" || fail "copy to pg: $(cat "$tmp/err")"
grep -q "^copied 4 sessions (.* events, 1 notes, [1-9][0-9]* snapshots, 6 tool calls) from $sq to postgresql://agentc@" "$tmp/out" \
  || fail "summary: $(cat "$tmp/out")"
grep -q "^agentc store copy: kit2: [0-9]* events$" "$tmp/err" || fail "progress: $(cat "$tmp/err")"
same "$sq" "$pg"
"$agentc" sessions show st --json --db "$pg" | jq -e '.session.state.greeting.hello == "Ada"' >/dev/null \
  || fail "the State of the copy"
"$agentc" sessions show kit --json --db "$pg" | jq -e '.session.toolkits.plane.states == ["authenticated","project_selected"]' >/dev/null \
  || fail "the toolkit of the copy"
calls=$(sql "SELECT string_agg(call_id || ':' || name || ':' || ok || ':' || (finished_ms >= started_ms AND started_ms > 0), ' ' ORDER BY call_id) FROM $schema.tool_calls WHERE session = 'kit'")
[ "$calls" = "a1:plane::login:1:true b1:plane::select_project:1:true" ] || fail "the tool calls of the copy: $calls"
snaps=$(sql "SELECT string_agg(session || ':' || n || ':' || kept, ' ' ORDER BY session, n) FROM $schema.snapshots")
[ "$snaps" = "kit2:9:1" ] || fail "the snapshots of the copy: $snaps"

# the destination has them: refused, nothing written; --force replaces
"$agentc" sessions rm st --db "$pg" >/dev/null || fail "rm"
"$agentc" store copy "$sq" "$pg" >"$tmp/out" 2>"$tmp/err" && fail "a copy over existing sessions was accepted"
grep -q "already has a session 'kit2' (--force replaces it)" "$tmp/err" || fail "refusal: $(cat "$tmp/err")"
"$agentc" sessions show st --db "$pg" >/dev/null 2>&1 && fail "the refused copy wrote st"
"$agentc" store copy "$sq" "$pg" --force >"$tmp/out" 2>"$tmp/err" || fail "copy --force: $(cat "$tmp/err")"
same "$sq" "$pg"

# PostgreSQL -> SQLite, then one session alone
"$agentc" store copy "$pg" "$sq2" >>"$tmp/out" 2>>"$tmp/err" || fail "copy to sqlite: $(cat "$tmp/err")"
same "$pg" "$sq2"
same "$sq" "$sq2"
"$agentc" sessions rm cmp --db "$sq2" >/dev/null || fail "rm cmp"
"$agentc" store copy "$pg" "$sq2" --session cmp >>"$tmp/out" 2>>"$tmp/err" || fail "copy --session: $(cat "$tmp/err")"
same "$sq" "$sq2"
# FROM is only read (opened read-only: nothing created beside it; a user other than root
# could not write these)
chmod a-w "$sq" "$tmp"
"$agentc" store copy "$sq" "$pg" --session cmp --force >>"$tmp/out" 2>>"$tmp/err" || { chmod u+w "$tmp" "$sq"; fail "copy from a read-only file: $(cat "$tmp/err")"; }
chmod u+w "$tmp" "$sq"
"$agentc" store copy "$pg" "$pg" >/dev/null 2>"$tmp/err2" && fail "a copy onto itself was accepted"
"$agentc" store copy "$sq" >/dev/null 2>&1; [ $? = 2 ] || fail "a missing TO is bad usage"
grep -q "$pw" "$tmp/out" "$tmp/err" "$tmp/err2" && fail "the password was shown"
echo ok
