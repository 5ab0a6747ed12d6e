#!/usr/bin/env bash
# byte_baseline.sh AGENTC HTTPD [--update]: the bytes a session leaves the process as (its
# journal lines, its store rows, the SSE frames a server streams of them) on fixed inputs,
# compared byte for byte with the fixtures in tests/cli/baseline/: scripted answers (text with
# escapes and non-ASCII, reasoning, tool calls, a retried call with a partial answer), every
# spec of the gallery, and every recorded provider stream of tests/llm/streams served by the
# loopback server. What varies from run to run (times, durations, the port, the temporary
# directory) is masked; everything else must not change. --update rewrites the fixtures.
agentc="$1" httpd="$2" update="${3:-}"
source "$(dirname "$0")/lib.sh"
need jq
need sqlite3
need curl
cd "$(dirname "$0")/../.." || exit 1
src=$(pwd)
fx=tests/cli/baseline
out="$tmp/out"
mkdir -p "$out"

# masks what varies: times and durations (keys ending in ms/_us, "t"), ids made of the clock,
# the loopback port, the temporary directory and the source tree's place
mask() {
  sed -E -e "s#$tmp#TMP#g" -e "s#$src/#SRC/#g" -e 's#127\.0\.0\.1:[0-9]+#127.0.0.1:PORT#g' \
    -e 's#"(t|[a-z_]*ms|[a-z_]*_us|elapsed[a-z_]*|duration[a-z_]*)":[0-9.]+#"\1":0#g' \
    -e 's#^([0-9]+)\|[0-9]+\|#\1|0|#' -e 's#\([0-9]+ ms\)#(N ms)#g'
}

cat >"$tmp/tools.json" <<'JSON'
{"tools": [{"name": "echo", "description": "Echoes", "parameters": {"type": "object"}, "command": ["cat"]},
           {"name": "shell_run", "description": "Runs", "parameters": {"type": "object"}, "command": ["cat"]}]}
JSON
call() { printf '{"id": "%s", "name": "%s", "arguments": "%s"}' "$1" "$2" "${3:-{\}}"; }
{ # text with quotes, a backslash, a newline, a tab, a control byte, Latin-1, CJK and an emoji
  printf '{"content": "He said \\"hi\\" \\\\ then\\nleft\\tfast \\u0001 caf\\u00e9 \\u65e5\\u672c \\ud83d\\ude00 done"}\n'
} >"$tmp/text.jsonl"
printf '{"reasoning": "Let me think about \\"this\\" for a while", "content": "It is 4."}\n' >"$tmp/think.jsonl"
{
  printf '{"content": "computing", "tool_calls": [%s, %s]}\n' \
    "$(call c1 calculator '{\"expression\": \"6 * 7\"}')" "$(call c2 calculator '{\"expression\": \"1 +\"}')"
  echo '{"content": "6 * 7 is 42"}'
} >"$tmp/calc.jsonl"
{
  echo '{"error": {"status": 503, "message": "unavailable", "retryable": true, "partial": "HALF-ANSWER "}}'
  echo '{"content": "whole answer"}'
} >"$tmp/retry.jsonl"
{
  # one call a round: calls of a round finish in any order
  printf '{"content": "", "tool_calls": [%s]}\n' "$(call c1 echo)"
  printf '{"content": "", "tool_calls": [%s]}\n' "$(call c2 shell_run)"
  printf '{"content": "", "tool_calls": [%s]}\n' "$(call c3 echo)"
  echo '{"content": "done"}'
} >"$tmp/two.jsonl"

db="$tmp/s.db"
cases=()
# run NAME ARGS...: a run of the prompt "hi" with a journal, then a stored one (a stored
# session's journal is the store's)
run() {
  local name=$1
  shift
  timeout 20 "$agentc" run --no-store --journal "$tmp/$name.journal" "$@" hi \
    >"$tmp/$name.stdout" 2>"$tmp/$name.stderr" </dev/null
  echo "exit $?" >>"$tmp/$name.stdout"
  timeout 20 "$agentc" run --db "$db" --session "$name" "$@" hi >/dev/null 2>&1 </dev/null
  cases+=("$name")
}
script=(--provider script --param backoff_initial=10ms)
run text "${script[@]}" --script "$tmp/text.jsonl"
run think "${script[@]}" --script "$tmp/think.jsonl"
run calc "${script[@]}" --script "$tmp/calc.jsonl" --tools builtin:calculator
run retry "${script[@]}" --script "$tmp/retry.jsonl"
for f in examples/specs/*.fsm; do
  b=$(basename "$f" .fsm)
  [ "$b" = turn_timeout ] && continue # its tool sleeps; gallery.sh covers it
  run "gallery_$b" "${script[@]}" --spec "$f" --script "$tmp/two.jsonl" --tools "$tmp/tools.json"
done

# the recorded streams, each followed by a plain answer for the call after a tool or an error
# each run has a server of its own: the server serves its files in turn
served() { # served PROV NAME STORE-ARGS...: one run against a fresh server
  local prov=$1 name=$2
  shift 2
  rm -f "$tmp/port"
  start_server --script "$tmp/streams"
  local base_url="http://127.0.0.1:$port"
  [ "$prov" = openai ] && base_url="$base_url/v1"
  AGENTC_TEST_KEY=sk-test timeout 20 "$agentc" run --provider "$prov" --base-url "$base_url" \
    --model m --api-key-env AGENTC_TEST_KEY --param backoff_initial=10ms \
    --param max_iterations=3 "$@" hi >"$tmp/$name.stdout" 2>"$tmp/$name.stderr" </dev/null
  echo "exit $?" >>"$tmp/$name.stdout"
  kill "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null
  server_pid=
}
for f in tests/llm/streams/*.sse; do
  b=$(basename "$f" .sse)
  rm -rf "$tmp/streams" && mkdir -p "$tmp/streams"
  cp "$f" "$tmp/streams/01.sse"
  case $b in
  anthropic_*) cp tests/llm/streams/anthropic_text.sse "$tmp/streams/02.sse"; prov=anthropic ;;
  *) cp tests/llm/streams/openai_text.sse "$tmp/streams/02.sse"; prov=openai ;;
  esac
  served $prov "stream_$b" --no-store --journal "$tmp/stream_$b.journal"
  cp "$tmp/stream_$b.stdout" "$tmp/stream_$b.keep"
  served $prov "stream_$b" --db "$db" --session "stream_$b"
  mv "$tmp/stream_$b.keep" "$tmp/stream_$b.stdout"
  cases+=("stream_$b")
done

# the SSE frames a server streams of a session it runs (and that session's store rows): a
# server per script, a turn, then the frames read again from the store
served_sse() { # served_sse NAME SCRIPT ARGS...
  local name=$1 script=$2
  shift 2
  rm -f "$tmp/sport"
  "$agentc" serve --db "$tmp/serve.db" --provider script --script "$script" "$@" \
    --listen 127.0.0.1:0 --port-file "$tmp/sport" 2>"$tmp/serve.err" &
  local spid=$!
  for _ in $(seq 1 600); do [ -s "$tmp/sport" ] && break; sleep 0.05; done
  [ -s "$tmp/sport" ] || fail "serve did not start: $(cat "$tmp/serve.err")"
  local url="http://127.0.0.1:$(cat "$tmp/sport")"
  curl -s --max-time 10 -H 'Content-Type: application/json' -d "{\"id\": \"$name\"}" \
    "$url/v1/sessions" >/dev/null
  curl -s --max-time 10 -H 'Content-Type: application/json' -d '{"content": "hi"}' \
    "$url/v1/sessions/$name/messages" >/dev/null
  for _ in $(seq 1 600); do
    curl -s --max-time 5 "$url/v1/sessions/$name" | jq -e '.status == "idle"' >/dev/null && break
    sleep 0.05
  done
  read_stream "$tmp/$name.sse" "$url/v1/sessions/$name/events" 1 ||
    fail "$name: no turn_done streamed: $(tail -c 300 "$tmp/$name.sse")"
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  {
    echo "== sse"
    grep -v '^: ' "$tmp/$name.sse" | tr -d '\r'
    echo "== store rows"
    sqlite3 "$tmp/serve.db" "SELECT n, t_ms, ev, data, steps FROM events WHERE session = '$name' ORDER BY n"
  } | mask >"$out/serve_$name.txt"
}
served_sse text "$tmp/text.jsonl"
served_sse think "$tmp/think.jsonl"
served_sse calc "$tmp/calc.jsonl" --tools builtin:calculator
served_sse retry "$tmp/retry.jsonl" --param backoff_initial=10ms
served_sse tools "$tmp/two.jsonl" --tools "$tmp/tools.json"

for c in "${cases[@]}"; do
  {
    echo "== stdout"
    cat "$tmp/$c.stdout"
    echo "== journal"
    cat "$tmp/$c.journal"
    echo "== store rows"
    sqlite3 "$db" "SELECT n, t_ms, ev, data, steps FROM events WHERE session = '$c' ORDER BY n"
  } | mask >"$out/$c.txt"
done

if [ "$update" = --update ]; then
  rm -rf "$fx" && mkdir -p "$fx" && cp "$out"/*.txt "$fx"/
  echo "fixtures written: $(ls "$fx" | wc -l) files in $fx"
  exit 0
fi
[ -d "$fx" ] || fail "no fixtures in $fx (run with --update once)"
for f in "$fx"/*.txt; do
  [ -f "$out/$(basename "$f")" ] || fail "$(basename "$f"): no longer produced"
done
for f in "$out"/*.txt; do
  b=$(basename "$f")
  [ -f "$fx/$b" ] || fail "$b: no fixture (run with --update)"
  cmp -s "$fx/$b" "$f" || fail "$b differs from its fixture: $(diff "$fx/$b" "$f" | head -20)"
done
echo "ok: $(ls "$out" | wc -l) baselines byte-identical to their fixtures"
