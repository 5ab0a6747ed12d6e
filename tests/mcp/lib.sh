#!/usr/bin/env bash
# Helpers for the MCP tests: usage `. lib.sh` from a test called with AGENTC NPM_DIR.
agentc="$(realpath "$1")"
npm_dir="$(realpath -m "$2")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/../cli/lib.sh"
need jq
need node
everything="$npm_dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
filesystem="$npm_dir/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
test_server="$here/test_server.js"
need_reference_servers() {
  [ -f "$everything" ] && [ -f "$filesystem" ] || {
    echo "SKIP: the reference MCP servers are not installed in $npm_dir (npm could not install them)"
    exit 77
  }
}
# script FILE LINE...: a script provider's turns
script() { local f=$1; shift; printf '%s\n' "$@" | jq -c . >"$f" || fail "bad script"; }
# run_agent TOOLS SCRIPT [ARGS...]: agentc run --jsonl with a bounded time; output in $tmp/out,
# stderr in $tmp/err, exit status in $rc
run_agent() {
  local tools=$1 s=$2; shift 2
  timeout 60 "$agentc" run --provider script --script "$s" --tools "$tools" --jsonl "$@" hi \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# result ID: the content of the tool_result for call ID; ok ID: its ok flag
result() { jq -r -s --arg id "$1" 'map(select(.type == "tool_result" and .id == $id)) | .[0].content' "$tmp/out"; }
ok() { jq -r -s --arg id "$1" 'map(select(.type == "tool_result" and .id == $id)) | .[0].ok' "$tmp/out"; }
expect_result() { # ID OK REGEX
  [ "$(ok "$1")" = "$2" ] && result "$1" | grep -Eq -- "$3" \
    || fail "call $1: expected ok=$2 and /$3/, got ok=$(ok "$1"): $(result "$1" | head -c 400); stderr: $(head -c 400 "$tmp/err")"
}
