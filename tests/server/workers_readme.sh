#!/usr/bin/env bash
# workers_readme.sh AGENTC HTTPD URI CLUSTER_DIR PORT: the README's three workers, one command
# each as written (its database, addresses and port moved to the throwaway cluster and
# 127.0.0.2-4, the model to the loopback server, the password in ~/.pgpass): each ready to a
# health check without a Host (HAProxy's httpchk), requests under the load balancer's name
# answered by any of them (a session created on one, messaged on another, streamed on the
# third), another name refused, the worker running a turn killed: a survivor finishes it, the
# stream on the third goes on, its ids those of a fresh replay.
set -uo pipefail
agentc=$1 httpd=$2 uri=$3 dir=$4 dbport=$5
command -v curl >/dev/null && command -v jq >/dev/null && command -v ss >/dev/null \
  || { echo "SKIP: curl, jq and ss needed"; exit 77; }
readme="$(pwd)/README.md"
. "$(dirname "$0")/frames_lib.sh"
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL (workers_readme.sh:${BASH_LINENO[0]}): $*" >&2; for f in "$tmp"/w*.err; do tail -n 5 "$f" >&2; done; exit 1; }
wait_for() { for _ in $(seq 1 400); do "$@" && return 0; sleep 0.05; done; return 1; } # 20 s
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/psql
sql() { PGOPTIONS='-c client_min_messages=warning' "$psql" -X -q -t -A -h "$dir/sock" -p "$dbport" -U agentc -d agentc -c "$1"; }
sql "DROP SCHEMA IF EXISTS readme CASCADE" || fail "psql"
cd "$tmp" || exit 1

# the block: from the line setting db to the load balancer's comment, continuations joined
sed -n '/Three workers, one command each/,/^```$/p' "$readme" | sed -n "/^db='/,/^# load balancer/p" \
  | sed -e ':a' -e '/\\$/N; s/\\\n *//; ta' >block.sh
[ "$(grep -c '^agentc serve ' block.sh)" = 3 ] || fail "README's three workers: $(cat block.sh)"
grep -q '^# load balancer .*httpchk GET /readyz' block.sh || fail "README's load balancer line: $(cat block.sh)"
lb=$(sed -n 's/^# load balancer (HAProxy) at \([^:]*\):.*/\1/p' block.sh)
[ -n "$lb" ] && grep -q -- "--allowed-hosts $lb" block.sh || fail "the balancer's name is not allowed: $(cat block.sh)"
hp=
for _ in $(seq 1 50); do # a port free on every address
  p=$((20000 + RANDOM % 30000))
  [ -z "$(ss -ltnH "sport = :$p" 2>/dev/null)" ] && { hp=$p; break; }
done
[ -n "$hp" ] || fail "no free port"
dbhost=$(sed -n "s|^db='postgresql://[^@]*@\([^/]*\)/.*|\1|p" block.sh)
sed -e "s|$dbhost/agentc'|127.0.0.1:$dbport/agentc?schema=readme'|" \
  -e "s|10\.0\.0\.\([123]\):8080|127.0.0.\1:8080|g" -e "s|127\.0\.0\.3:8080|127.0.0.4:8080|" \
  -e "s|127\.0\.0\.2:8080|127.0.0.3:8080|" -e "s|127\.0\.0\.1:8080|127.0.0.2:8080|" \
  -e "s|:8080|:$hp|g" -e "s|^agentc |\"$agentc\" |" block.sh >run.sh
pw=$(sed -n 's|^postgresql://[^:]*:\([^@]*\)@.*|\1|p' <<<"$uri")
echo "127.0.0.1:$dbport:agentc:agentc:$pw" >.pgpass
chmod 600 .pgpass
printf 'tok-readme-0123456789 team\n' >tokens.txt
"$httpd" --port-file mport --log mlog --mode calc --latency 400 &
pids+=($!)
wait_for test -s mport || fail "the model server did not start"
export HOME=$tmp OPENAI_API_KEY=sk-test-$$ OPENAI_BASE_URL="http://127.0.0.1:$(cat mport)/v1"
for n in 1 2 3; do # one command per worker
  { head -1 run.sh; printf 'exec '; grep '^"' run.sh | sed -n "${n}p"; } >w$n.sh
  grep -q -- "--worker-id w$n " w$n.sh || fail "worker $n's command: $(cat w$n.sh)"
  bash w$n.sh 2>w$n.err &
  pids+=($!)
done
u() { echo "http://127.0.0.$(($1 + 1)):$hp"; }
# HAProxy's check: GET /readyz, HTTP/1.0, no Host
ready() { curl -s -0 -H 'Host:' --max-time 2 "$(u "$1")/readyz" | jq -e '.status == "ready"' >/dev/null; }
for n in 1 2 3; do wait_for ready $n || fail "worker $n not ready"; done
j() { curl -s --max-time 10 -H "Host: $lb" -H 'Authorization: Bearer tok-readme-0123456789' \
  -H 'Content-Type: application/json' "$@"; }
out=$(curl -s --max-time 5 -H 'Host: elsewhere.example.com' "$(u 2)/readyz" -w '\n%{http_code}')
[ "$(tail -1 <<<"$out")" = 421 ] || fail "another name answered: $out"
j -X POST -d '{"id": "r"}' "$(u 1)/v1/sessions" | jq -e '.id == "r" and .worker == "w1"' >/dev/null \
  || fail "create on 1"
j -N --max-time 30 "$(u 3)/v1/sessions/r/events" >stream &
pids+=($!)
wait_for grep -q '^id: 1$' stream || fail "no stream on 3"
j -X POST -d '{"content": "What is 17 * 23?"}' "$(u 2)/v1/sessions/r/messages" | jq -e '.accepted == "started"' >/dev/null \
  || fail "message on 2"
j "$(u 3)/v1/sessions/r" | jq -e '.status == "running" and .worker == "w1"' >/dev/null || fail "not running on 1"
kill -9 "${pids[1]}" # worker 1, its model call in flight
done_turn() { j "$(u 3)/v1/sessions/r" | jq -e '.status == "idle" and .last_turn.outcome == "completed" and (.worker == "w2" or .worker == "w3")' >/dev/null; }
wait_for done_turn || fail "the turn was not finished by a survivor: $(j "$(u 3)/v1/sessions/r")"
wait_for turns_done stream 1 || fail "no turn_done on 3's stream: $(tail -c 300 stream)"
increasing stream || fail "3's stream ids do not strictly increase"
j -N --max-time 3 "$(u 2)/v1/sessions/r/events" >replay
[ "$(norm stream)" = "$(norm replay)" ] || fail "the stream on 3 differs from a replay on 2"
grep -q "$pw" w*.err stream && fail "the password was shown"
echo "workers_readme: ok"
