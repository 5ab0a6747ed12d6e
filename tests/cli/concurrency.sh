#!/usr/bin/env bash
# `agentc batch --concurrency N` runs N requests at once against a slow server,
# whether it keeps its connections alive or closes them after each response:
# 12 sessions with 800 ms of latency each must take under 2 x 800 ms (one wave, not one request after another).
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
export AGENTC_TEST_KEY="sk-test-$$"
n=12 latency=800
for i in $(seq 1 $n); do printf '{"id": "s%d", "prompt": "hello %d"}\n' "$i" "$i"; done >"$tmp/in.jsonl"

for mode in keepalive close; do
  if [ -n "$server_pid" ]; then kill "$server_pid"; wait "$server_pid" 2>/dev/null; fi
  rm -f "$tmp/port" "$tmp/requests"
  if [ $mode = close ]; then start_server --mode calc --latency $latency --close
  else start_server --mode calc --latency $latency; fi
  t0=$(date +%s%N)
  "$agentc" batch "$tmp/in.jsonl" --base-url "$base" --model m --api-key-env AGENTC_TEST_KEY \
    --concurrency $n >"$tmp/out.$mode" 2>"$tmp/err.$mode"
  rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  [ $rc -eq 0 ] || fail "$mode: batch exited $rc: $(head -3 "$tmp/err.$mode")"
  [ "$(jq -r 'select(.status == "completed") | .id' "$tmp/out.$mode" | sort -u | wc -l)" -eq $n ] \
    || fail "$mode: not every session completed: $(head -c 300 "$tmp/out.$mode")"
  [ "$(wc -l <"$tmp/requests")" -eq $n ] || fail "$mode: $(wc -l <"$tmp/requests") requests, expected $n"
  [ $ms -lt $((2 * latency)) ] \
    || fail "$mode: $n sessions at concurrency $n took $ms ms with $latency ms latency each (serialised?)"
  echo "$mode: $n sessions in $ms ms"
done
