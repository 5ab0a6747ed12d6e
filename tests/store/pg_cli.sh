#!/usr/bin/env bash
# pg_cli.sh AGENTC URI CLUSTER_DIR PORT: agentc's commands on a PostgreSQL store end to end:
# run --session (twice, the second continues), $AGENTC_DB and postgres://, sessions list,
# batch with $AGENTC_DB (no --db),
# serve --db (a session created and answered over HTTP, another after the database restarted,
# then listed by the CLI), serve with $AGENTC_DB and --db-listen in its schema; the password
# of the URI in no output nor in the store; a wrong password, a server that does not answer and a bad schema
# name give clear errors without it; a schema newer than this agentc is refused.
set -uo pipefail
agentc=$1 uri=$2 dir=$3 port=$4
pw=agentc-test-pw
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (pg_cli.sh:${BASH_LINENO[0]}): $*" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
sql() { PGOPTIONS='-c client_min_messages=warning' "$psql" -X -q -t -A -h "$dir/sock" -p "$port" -U agentc -d agentc -c "$1"; }
db="$uri?schema=cli"
sql "DROP SCHEMA IF EXISTS cli CASCADE" || fail "psql"
printf '{"content": "first answer"}\n{"content": "second answer"}\n' >"$tmp/script"

out=$(timeout 30 "$agentc" run --provider script --script "$tmp/script" --db "$db" --session s1 hello 2>&1) \
  || fail "run: $out"
[ "$out" = "first answer" ] || fail "run answered: $out"
out=$(timeout 30 "$agentc" run --provider script --script "$tmp/script" --db "$db" --session s1 again 2>&1) \
  || fail "run again: $out"
[ "$out" = "second answer" ] || fail "run again answered: $out"
[ "$(sql "SELECT count(*) FROM cli.events WHERE session = 's1' AND ev = 'user_message'")" = 2 ] \
  || fail "two user messages expected in the journal"
out=$(AGENTC_DB="${db/postgresql:/postgres:}" timeout 30 "$agentc" sessions list 2>&1) || fail "list: $out"
grep -q '^s1 ' <<<"$out" || fail "sessions list (AGENTC_DB, postgres://): $out"

# batch with $AGENTC_DB: every session stored under its input id, in one group commit per loop turn
for i in 1 2 3 4 5; do echo "{\"id\": \"b$i\", \"prompt\": \"q$i\"}"; done >"$tmp/in.jsonl"
for i in 1 2 3 4 5; do echo '{"content": "batch answer"}'; done >"$tmp/bscript"
AGENTC_DB="$db" timeout 60 "$agentc" batch "$tmp/in.jsonl" --provider script --script "$tmp/bscript" \
  --concurrency 5 >"$tmp/bout" 2>"$tmp/berr" || fail "batch: $(cat "$tmp/berr")"
[ "$(jq -s '[.[] | select(.status == "completed" or .answer == "batch answer")] | length' "$tmp/bout")" = 5 ] \
  || fail "batch results: $(cat "$tmp/bout")"
[ "$(sql "SELECT count(*) FROM cli.sessions WHERE id LIKE 'b%' AND at_rest = 1")" = 5 ] \
  || fail "batch sessions not stored at rest"

# serve --db: a session created and answered over HTTP, the database restarted meanwhile
echo '{"content": "served answer"}' >"$tmp/script3"
"$agentc" serve --db "$db" --provider script --script "$tmp/script3" --listen 127.0.0.1:0 \
  --port-file "$tmp/port" 2>"$tmp/serve.err" &
spid=$!
pids+=("$spid")
wait_for test -s "$tmp/port" || fail "serve did not start: $(cat "$tmp/serve.err")"
url="http://127.0.0.1:$(cat "$tmp/port")"
curl -s --max-time 10 -H 'Content-Type: application/json' -X POST -d '{"id": "w"}' "$url/v1/sessions" | jq -e '.id == "w"' >/dev/null \
  || fail "create over HTTP"
curl -s --max-time 10 -H 'Content-Type: application/json' -X POST -d '{"content": "hi"}' "$url/v1/sessions/w/messages" >/dev/null
answered() { curl -s --max-time 5 "$url/v1/sessions/w" | jq -e '.answer == "served answer"' >/dev/null; }
wait_for answered || fail "no answer over HTTP: $(curl -s "$url/v1/sessions/w")"
# the database restarts under the server: its next operations connect again
bash "$(dirname "$0")/pg_cluster.sh" restart "$dir" "$port" || fail "restart"
curl -s --max-time 10 -H 'Content-Type: application/json' -X POST -d '{"id": "w2"}' "$url/v1/sessions" | jq -e '.id == "w2"' >/dev/null \
  || fail "create after the database restarted: $(cat "$tmp/serve.err")"
[ "$(sql "SELECT count(*) FROM cli.sessions WHERE id LIKE '%/w2'")" = 1 ] || fail "w2 not stored"
kill -TERM "$spid"
wait "$spid" || fail "serve's exit status"
grep -q "store postgresql://agentc@127.0.0.1:$port/agentc: " "$tmp/serve.err" \
  || fail "serve names the store: $(cat "$tmp/serve.err")"
out=$(timeout 30 "$agentc" sessions list --db "$db" 2>&1) || fail "list: $out"
grep -q '/w ' <<<"$out" || fail "the served session is not listed: $out"
grep -q "$pw" "$tmp/serve.err" && fail "serve printed the password"
# nor is it in what the store keeps (journals, agents, params, notes)
dump=$(dirname "$psql")/pg_dump
"$dump" -h "$dir/sock" -p "$port" -U agentc -n cli agentc >"$tmp/dump.sql" || fail "pg_dump"
grep -q "user_message" "$tmp/dump.sql" || fail "the dump has no journal"
grep -q "$pw" "$tmp/dump.sql" && fail "the store keeps the password"

# --db-listen wakes workers in --db's schema (a URL without schema= is given it: the heartbeat,
# a statement of that connection, renews this schema's row; a session's row made there), and
# refuses another schema and a store that is not PostgreSQL; the store named by $AGENTC_DB
AGENTC_DB="$db" "$agentc" serve --provider script --script "$tmp/script3" --listen 127.0.0.1:0 \
  --port-file "$tmp/port2" --worker-id envw --lease-ms 1000 --db-listen "$uri?application_name=wake" \
  2>"$tmp/serve2.err" &
spid=$!
pids+=("$spid")
wait_for test -s "$tmp/port2" || fail "serve (--db-listen) did not start: $(cat "$tmp/serve2.err")"
url="http://127.0.0.1:$(cat "$tmp/port2")"
curl -s --max-time 10 -H 'Content-Type: application/json' -X POST -d '{"id": "envs"}' "$url/v1/sessions" \
  | jq -e '.id == "envs"' >/dev/null || fail "create over HTTP (--db-listen): $(cat "$tmp/serve2.err")"
[ "$(sql "SELECT count(*) FROM cli.sessions WHERE id LIKE '%/envs'")" = 1 ] \
  || fail "the session's row is not in the store's schema"
hb=$(sql "SELECT heartbeat_ms FROM cli.workers WHERE id = 'envw'")
[ -n "$hb" ] || fail "no row of the worker in the store's schema"
renewed() { [ "$(sql "SELECT heartbeat_ms > $hb FROM cli.workers WHERE id = 'envw'")" = t ]; }
wait_for renewed || fail "the wake-up connection's heartbeat did not renew the store schema's row"
curl -s --max-time 5 "$url/readyz" | jq -e '.status == "ready"' >/dev/null || fail "not ready: $(cat "$tmp/serve2.err")"
kill -TERM "$spid"
wait "$spid" || fail "serve's exit status (--db-listen)"
grep -q "$pw" "$tmp/serve2.err" && fail "serve printed the password"
out=$(timeout 10 "$agentc" serve --db "$db" --db-listen "$uri?schema=other" --listen 127.0.0.1:0 \
  --provider script --script "$tmp/script3" 2>&1) && fail "--db-listen of another schema was taken"
grep -q "db-listen names schema 'other', --db schema 'cli'" <<<"$out" || fail "--db-listen schema: $out"
out=$(timeout 10 "$agentc" serve --db "$tmp/x.db" --db-listen "$uri" --listen 127.0.0.1:0 \
  --provider script --script "$tmp/script3" 2>&1) && fail "--db-listen beside an SQLite store was taken"
grep -q "db-listen is for workers of a PostgreSQL store" <<<"$out" || fail "--db-listen, SQLite: $out"
grep -q "$pw" <<<"$out" && fail "the password was shown: $out"
[ ! -e "$tmp/x.db" ] || fail "a refused serve made its store"

# errors: clear, without the password
out=$(timeout 30 "$agentc" sessions list --db "postgresql://agentc:Wrong-Secret-1@127.0.0.1:$port/agentc" 2>&1) \
  && fail "a wrong password was accepted"
grep -q "password authentication failed" <<<"$out" || fail "wrong password: $out"
grep -q "Wrong-Secret-1" <<<"$out" && fail "the password was shown: $out"
out=$(timeout 30 "$agentc" sessions list --db "postgresql://agentc:Wrong-Secret-2@127.0.0.1:1/agentc" 2>&1) \
  && fail "a closed port was accepted"
grep -q "cannot open store 'postgresql://agentc@127.0.0.1:1/agentc'" <<<"$out" || fail "no server: $out"
grep -q "Wrong-Secret-2" <<<"$out" && fail "the password was shown: $out"
out=$(timeout 30 "$agentc" sessions list --db "$uri?schema=Bad-Name" 2>&1) && fail "a bad schema name was accepted"
grep -q "schema" <<<"$out" || fail "bad schema: $out"
grep -q "$pw" <<<"$out" && fail "the password was shown: $out"

# a newer schema is refused, nothing changed
sql "UPDATE cli.meta SET value = 99 WHERE key = 'version'"
out=$(timeout 30 "$agentc" sessions list --db "$db" 2>&1) && fail "a newer schema was opened"
grep -q "schema version 99, newer than this agentc reads" <<<"$out" || fail "newer schema: $out"
[ "$(sql "SELECT value FROM cli.meta WHERE key = 'version'")" = 99 ] || fail "the version was changed"
echo "pg_cli: ok"
