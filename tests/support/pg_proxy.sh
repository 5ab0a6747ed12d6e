# pg_proxy.sh, sourced: start_proxy DB_PORT DELAY_FILE starts bench/loop_stall.mjs's proxy to the
# database on DB_PORT, holding each packet the milliseconds DELAY_FILE says, on a port drawn near
# it (another drawn when another test's proxy holds it, five tries); sets pport and proxy (its
# pid), or returns 1.
start_proxy() {
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  for _ in $(seq 1 5); do
    pport=$(($1 + 1000 + RANDOM % 1000))
    node "$root/bench/loop_stall.mjs" proxy "$pport" "$1" 0 "$2" &
    proxy=$!
    for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null && break; sleep 0.05; done
    sleep 0.3
    kill -0 "$proxy" 2>/dev/null && return 0
  done
  return 1
}
