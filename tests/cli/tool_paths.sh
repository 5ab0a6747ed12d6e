#!/usr/bin/env bash
# A tool file's relative command (with a slash) names a file beside the tool file, whatever
# folder agentc runs from; a bare name is still looked up in PATH.
agentc="$(realpath "$1")"
. "$(dirname "$0")/lib.sh"
need jq
mkdir -p "$tmp/kit/tools"
printf '#!/bin/sh\necho "beside the tool file"\n' >"$tmp/kit/tools/where.sh"
chmod +x "$tmp/kit/tools/where.sh"
cat >"$tmp/kit/tools.json" <<'JSON'
{"tools": [{"name": "where", "description": "says where it runs from", "command": ["./tools/where.sh"]},
           {"name": "echo", "description": "a bare name from PATH", "command": ["echo", "from PATH"]}]}
JSON
printf '%s\n' '{"tool_calls": [{"id": "c1", "name": "where", "arguments": "{}"}, {"id": "c2", "name": "echo", "arguments": "{}"}]}' \
  '{"content": "done"}' >"$tmp/s.jsonl"
(cd / && "$agentc" run --provider script --script "$tmp/s.jsonl" --tools "$tmp/kit/tools.json" --jsonl hi) \
  >"$tmp/out" 2>"$tmp/err" || fail "run failed: $(cat "$tmp/err")"
jq -e -s 'any(.[]; .type == "tool_result" and .id == "c1" and .ok and (.content | test("beside the tool file")))' \
  "$tmp/out" >/dev/null || fail "the relative command did not run from the tool file's folder: $(cat "$tmp/out")"
jq -e -s 'any(.[]; .type == "tool_result" and .id == "c2" and .ok and (.content | test("from PATH")))' \
  "$tmp/out" >/dev/null || fail "the bare command did not run from PATH: $(cat "$tmp/out")"
echo ok
