#!/usr/bin/env bash
# pg_cluster.sh start|stop|restart|down|up DIR PORT: a throwaway PostgreSQL 15 cluster for the
# store's tests (down stops its server keeping its data, up starts it again),
# in DIR (data and unix socket), listening on 127.0.0.1:PORT and the socket only. Role
# "agentc" with password "agentc-test-pw" (scram over TCP), database "agentc". As root the
# server runs as the postgres user. Every wait is bounded; stop removes DIR.
set -euo pipefail
cmd=$1 dir=$2 port=$3
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "pg_cluster: no PostgreSQL server (apt-get install postgresql-15)" >&2; exit 1; }
as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
stop() {
  if [ -f "$dir/data/postmaster.pid" ]; then
    as "$bin/pg_ctl" -D "$dir/data" -m immediate -t 20 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}
if [ "$cmd" = stop ]; then stop; exit 0; fi
if [ "$cmd" = restart ]; then # the server restarted under its clients (their connections cut)
  as "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 restart >/dev/null; exit; fi
if [ "$cmd" = down ]; then as "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null; exit; fi
up() {
  as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir/sock -c fsync=off" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
}
if [ "$cmd" = up ]; then up; exit; fi
stop
mkdir -p "$dir/sock"
[ "$(id -u)" = 0 ] && chown -R postgres "$dir"
chmod 700 "$dir"
as "$bin/initdb" -D "$dir/data" -U postgres -E UTF8 --locale=C.UTF-8 -A trust >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
cat >"$dir/data/pg_hba.conf" <<HBA
local all all trust
host all all 127.0.0.1/32 scram-sha-256
HBA
up
as "$bin/psql" -X -q -h "$dir/sock" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 <<SQL
CREATE ROLE agentc LOGIN PASSWORD 'agentc-test-pw';
CREATE DATABASE agentc OWNER agentc;
SQL
echo "pg_cluster: up on 127.0.0.1:$port and $dir/sock"
