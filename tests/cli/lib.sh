#!/usr/bin/env bash
# Helpers for the CLI tests: a scratch folder, failure reporting, and the
# loopback agentc_test_httpd server (started once per test script).
set -uo pipefail
tmp=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
  keep_journals
  rm -rf "$tmp"
}
# The journals a test recorded are kept for the suite's coverage (tests/cli/suite_coverage.sh):
# with AGENTC_TEST_JOURNALS set (CMakeLists.txt: BUILD/test-journals), every file under $tmp
# that starts as a journal does is copied to AGENTC_TEST_JOURNALS/SCRIPT-SUM/ (SUM: of the
# script's arguments, for a script several tests run), the last run's.
keep_journals() {
  [ -n "${AGENTC_TEST_JOURNALS:-}" ] && [ -d "$tmp" ] || return 0
  local dest n=0
  dest="$AGENTC_TEST_JOURNALS/$(basename "$0" .sh)-$(cksum <<<"$*" | cut -d' ' -f1)"
  rm -rf "$dest"
  while IFS= read -r -d '' f; do
    [ "$(head -c 17 "$f" 2>/dev/null)" = '{"agentc_journal"' ] || continue
    mkdir -p "$dest" && cp "$f" "$dest/$n.journal" 2>/dev/null && n=$((n + 1))
  done < <(find "$tmp" -type f -size -20M -print0 2>/dev/null)
}
trap cleanup EXIT
fail() { echo "FAIL (${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}): $*" >&2; exit 1; }
# wait_for CMD...: polls CMD until it succeeds, for up to 30 s (a loaded machine is slow: a
# bound is what a failing test waits, never what a passing one does).
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; }
need() { command -v "$1" >/dev/null || { echo "SKIP: $1 not installed"; exit 77; }; }

# start_server ARGS...: runs agentc_test_httpd with ARGS, waits for its port,
# sets $port and $base (the OpenAI base URL); requests are logged to $tmp/requests.
start_server() {
  "$httpd" --port-file "$tmp/port" --log "$tmp/requests" "$@" &
  server_pid=$!
  wait_for test -s "$tmp/port" || fail "agentc_test_httpd did not start"
  port=$(cat "$tmp/port")
  base="http://127.0.0.1:$port/v1"
}

. "$(dirname "${BASH_SOURCE[0]}")/../support/sse_read.sh" # read_stream FILE URL N

# every_line_json FILE: each line is one JSON object (and there is at least one).
every_line_json() {
  [ -s "$1" ] || fail "$1 is empty"
  jq -R -e -s 'split("\n") | map(select(length > 0) | fromjson | type == "object") | all' "$1" >/dev/null 2>&1 \
    || fail "$1 has a line that is not a JSON object: $(head -c 300 "$1")"
}

# has_line FILE CONDITION: some JSON line of FILE satisfies the jq CONDITION.
has_line() { jq -s -e "any(.[]; $2)" "$1" >/dev/null 2>&1; }
