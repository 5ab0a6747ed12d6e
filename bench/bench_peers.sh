#!/usr/bin/env bash
# The peer benchmark: the same workload run by agentc batch, LangGraph.js and the OpenAI Agents
# SDK for JS (bench/peers: pinned npm versions and the node 22 they need, installed into
# PEERS_DIR by bench/peers/setup.sh): N sessions (default 1,000) at concurrency C (default 200),
# each a calculator agent making 3 model calls (streamed) and 2 tool calls, against one
# agentc_test_httpd --mode calc answering every call after 50 ms. The three alternate RUNS times
# (default 5) in one run; each run prints every program's CPU time (user + sys) and peak RSS,
# and the ratios the better peer / agentc of CPU and of peak RSS (the better peer: the one with
# less CPU, and the one with less RSS), as min / median / max over the runs (targets: 50x CPU,
# 20x memory).
#
#   bench/bench_peers.sh AGENTC AGENTC_TEST_HTTPD PEERS_DIR [N] [C] [RUNS]
#   (or: cmake --build BUILD --target bench_peers)
set -uo pipefail
agentc="$1" httpd="$2" peers="$3" n="${4:-1000}" conc="${5:-200}" runs="${6:-5}"
[ -x /usr/bin/time ] || { echo "bench_peers: needs /usr/bin/time (GNU time)" >&2; exit 1; }
here="$(cd "$(dirname "$0")" && pwd)"
node=$(bash "$here/peers/setup.sh" "$peers") || exit 1
tmp=$(mktemp -d)
server_pid=
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# Each response has its own id, as real servers give (LangGraph merges messages by id).
"$httpd" --port-file "$tmp/port" --mode calc --latency 50 --unique-ids &
server_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
[ -s "$tmp/port" ] || { echo "bench_peers: server did not start" >&2; exit 1; }
base="http://127.0.0.1:$(cat "$tmp/port")/v1"
for i in $(seq 1 "$n"); do
  printf '{"id": %d, "prompt": "What is %d * 3, then %d + 7?"}\n' "$i" "$i" "$((i * 3))"
done >"$tmp/in.jsonl"

# run NAME COMMAND...: prints "cpu_seconds peak_rss_kb wall_seconds" of COMMAND, whose output
# must show every session completed with the right answer
run() {
  local name=$1
  shift
  BENCH_KEY=x /usr/bin/time -f "%U %S %M %e" -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" ||
    { echo "bench_peers: $name failed: $(tail -3 "$tmp/err")" >&2; return 1; }
  local ok
  ok=$(grep '"status":"completed"' "$tmp/out" | grep -c 'The answer is [0-9]')
  [ "$ok" -eq "$n" ] || { echo "bench_peers: $name completed $ok of $n sessions" >&2; return 1; }
  awk '{ printf "%.2f %d %.2f\n", $1 + $2, $3, $4 }' "$tmp/time"
}
agentc_run() {
  run agentc "$agentc" batch "$tmp/in.jsonl" --base-url "$base" --model bench \
    --api-key-env BENCH_KEY --tools builtin:calculator --concurrency "$conc"
}
langgraph_run() { run langgraph "$node" "$peers/langgraph.mjs" "$base" "$tmp/in.jsonl" "$conc"; }
agents_run() { run openai-agents "$node" "$peers/openai_agents.mjs" "$base" "$tmp/in.jsonl" "$conc"; }

agentc_run >/dev/null || exit 1 # warm the page cache
echo "$n calculator sessions at concurrency $conc, 3 model calls (streamed, 50 ms each) + 2 tool calls each; $runs runs"
rows=()
for r in $(seq 1 "$runs"); do
  read -r ac am aw < <(agentc_run) || exit 1
  read -r lc lm lw < <(langgraph_run) || exit 1
  read -r oc om ow < <(agents_run) || exit 1
  awk -v r="$r" -v ac="$ac" -v am="$am" -v aw="$aw" -v lc="$lc" -v lm="$lm" -v lw="$lw" \
    -v oc="$oc" -v om="$om" -v ow="$ow" 'BEGIN {
    printf "  run %d: agentc %.2f s CPU, %.1f MB (%.1f s wall); LangGraph.js %.2f s, %.1f MB (%.1f s);", r, ac, am / 1024, aw, lc, lm / 1024, lw
    printf " OpenAI Agents SDK %.2f s, %.1f MB (%.1f s)\n", oc, om / 1024, ow }'
  rows+=("$(awk -v ac="$ac" -v am="$am" -v lc="$lc" -v lm="$lm" -v oc="$oc" -v om="$om" 'BEGIN {
    c = (lc < oc ? lc : oc); m = (lm < om ? lm : om)
    printf "%.1f %.1f", (ac > 0 ? c / ac : 0), m / am }')")
done
# summary COLUMN: min / median / max of that column of the runs' ratios
summary() {
  printf '%s\n' "${rows[@]}" | cut -d' ' -f"$1" | sort -n | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.1f %.1f %.1f", v[1], m, v[NR] }'
}
read -r c1 cm c2 < <(summary 1)
read -r m1 mm m2 < <(summary 2)
awk -v c1="$c1" -v cm="$cm" -v c2="$c2" -v m1="$m1" -v mm="$mm" -v m2="$m2" 'BEGIN {
  printf "  the better peer / agentc: CPU %.1f / %.1f / %.1fx, peak RSS %.1f / %.1f / %.1fx (min / median / max)\n", c1, cm, c2, m1, mm, m2
  printf "  targets: 50x less CPU: %s; 20x less memory: %s\n", (cm >= 50 ? "met" : "NOT met"), (mm >= 20 ? "met" : "NOT met")
}'
