#!/usr/bin/env bash
# Output errors: a full disk or a closed pipe on stdout is an error (exit 4 with
# a message, or death by SIGPIPE, 141), never a silent exit 0, and the session
# is cancelled (journal ends with cancel); the same whether or not a tool ran.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
[ -w /dev/full ] || { echo "SKIP: no /dev/full"; exit 77; }
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$"
net=(--base-url "$base" --model m --api-key-env AGENTC_TEST_KEY)
last_event() { jq -s -r 'map(select(.ev)) | last | .ev' "$1"; }

# ---- a full disk: exit 4 and a message, for run (plain and --jsonl), demo and batch ----------
echo '{"content": "hello world answer"}' >"$tmp/s1.jsonl"
for mode in "" --jsonl; do
  "$agentc" run --provider script --script "$tmp/s1.jsonl" $mode hi >/dev/full 2>"$tmp/err"; rc=$?
  [ $rc -eq 4 ] || fail "run $mode >/dev/full: exit $rc, expected 4"
  grep -q "cannot write the output: No space left on device" "$tmp/err" \
    || fail "run $mode >/dev/full: no message: $(cat "$tmp/err")"
done
"$agentc" demo --journal "$tmp/demo.journal" >/dev/full 2>"$tmp/err"; rc=$?
[ $rc -eq 4 ] || fail "demo >/dev/full: exit $rc, expected 4"
printf '{"id": 1, "prompt": "hi"}\n{"id": 2, "prompt": "hi"}\n' >"$tmp/in.jsonl"
"$agentc" batch "$tmp/in.jsonl" --provider script --script "$tmp/s1.jsonl" >/dev/full 2>"$tmp/err"; rc=$?
[ $rc -eq 4 ] || fail "batch >/dev/full: exit $rc, expected 4"
grep -q "cannot write the output" "$tmp/err" || fail "batch >/dev/full: no message: $(cat "$tmp/err")"
"$agentc" --version >/dev/full 2>/dev/null && fail "--version >/dev/full exits 0"

# ---- a closed pipe while the answer streams: SIGPIPE (141), the session cancelled at once ------
start=$(date +%s)
"$agentc" run "${net[@]}" --journal "$tmp/j1" "SLOW: a story" 2>/dev/null | head -c 5 >/dev/null
rc=${PIPESTATUS[0]}
[ $rc -eq 141 ] || fail "closed pipe while streaming: exit $rc, expected 141"
[ $(( $(date +%s) - start )) -lt 8 ] || fail "the stream went on after the pipe closed"
[ "$(last_event "$tmp/j1")" = cancel ] || fail "journal after a closed pipe: last event $(last_event "$tmp/j1")"
"$agentc" replay "$tmp/j1" --check >/dev/null || fail "journal after a closed pipe does not replay"

# ---- the same after an external tool ran (the tool layer ignores SIGPIPE) ---------------------
cat >"$tmp/tools.json" <<'JSON'
{"tools": [{"name": "echo", "description": "Echoes", "parameters": {"type": "object"}, "command": ["cat"]}]}
JSON
big=$(head -c 1000000 /dev/zero | tr '\0' a)
{
  echo '{"content": "", "tool_calls": [{"id": "c1", "name": "echo", "arguments": "{}"}]}'
  printf '{"content": "%s"}\n' "$big"
} >"$tmp/tool.jsonl"
for mode in "" --jsonl; do
  "$agentc" run --provider script --script "$tmp/tool.jsonl" --tools "$tmp/tools.json" $mode hi \
    2>/dev/null | head -c 10 >/dev/null
  rc=${PIPESTATUS[0]}
  [ $rc -eq 141 ] || fail "closed pipe after a tool ran ($mode): exit $rc, expected 141"
done
# a partial answer discarded by a failure that is not retried does not promise a retry
printf '%s\n' '{"error": {"message": "gone", "retryable": false, "partial": "half an ans"}}' \
  >"$tmp/fail.jsonl"
"$agentc" run --provider script --script "$tmp/fail.jsonl" --param max_retries=0 hi \
  >"$tmp/fail.out" 2>"$tmp/fail.err" && fail "a failed turn exited 0"
grep -q "discarded" "$tmp/fail.out" || fail "no discard note: $(cat "$tmp/fail.out")"
grep -q "retrying" "$tmp/fail.out" "$tmp/fail.err" && fail "'retrying' printed with no retry"
grep -q "gone" "$tmp/fail.err" || fail "the failure not reported: $(cat "$tmp/fail.err")"
echo "ok"
