#!/usr/bin/env bash
# --output-schema with the script provider: the answer printed is the accepted JSON text,
# --jsonl marks each refused answer, a turn refused output_retries more times fails (exit 1)
# with the errors, a schema agentc cannot check is refused before anything runs (exit 3),
# and batch results carry the accepted answer.
agentc="$1"
. "$(dirname "$0")/lib.sh"
need jq
echo '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}' \
  >"$tmp/schema.json"
printf '%s\n' '{"content": "not json"}' '{"content": "{\"n\": \"x\"}"}' '{"content": "{\"n\": 3}"}' \
  >"$tmp/s.jsonl"

# plain: only the accepted answer reaches stdout; the refusals are noted on stderr
"$agentc" run --provider script --script "$tmp/s.jsonl" --output-schema "$tmp/schema.json" hi \
  >"$tmp/out" 2>"$tmp/err" || fail "run exited $?: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = '{"n": 3}' ] || fail "plain answer: $(cat "$tmp/out")"
[ "$(grep -c 'refused by the output schema' "$tmp/err")" -eq 2 ] || fail "refusal notes: $(cat "$tmp/err")"

# --jsonl: a rejected line per refusal, done.answer the JSON text
"$agentc" run --provider script --script "$tmp/s.jsonl" --output-schema "$tmp/schema.json" \
  --jsonl hi >"$tmp/j" 2>"$tmp/err" || fail "run --jsonl exited $?: $(cat "$tmp/err")"
every_line_json "$tmp/j"
[ "$(jq -s 'map(select(.type == "rejected")) | length' "$tmp/j")" -eq 2 ] || fail "rejected lines: $(cat "$tmp/j")"
has_line "$tmp/j" '.type == "rejected" and .attempt == 1 and (.errors | test("not JSON"))' \
  || fail "first rejection: $(cat "$tmp/j")"
has_line "$tmp/j" '.type == "rejected" and .attempt == 2 and .errors == "/n: expected integer, got string"' \
  || fail "second rejection: $(cat "$tmp/j")"
has_line "$tmp/j" '.type == "done" and .status == "completed" and .answer == "{\"n\": 3}"' \
  || fail "done: $(cat "$tmp/j")"

# out of tries: the turn fails with the last errors
"$agentc" run --provider script --script "$tmp/s.jsonl" --output-schema "$tmp/schema.json" \
  --param output_retries=1 hi >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "out of tries: exit $rc, expected 1"
grep -q "does not match the output schema, after 1 retry (output_retries = 1): /n: expected integer" \
  "$tmp/err" || fail "out of tries: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "a refused answer was printed: $(cat "$tmp/out")"

# a schema the validator refuses, or no such file: exit 3 before any call
echo '{"type": "object", "frobnicate": 1}' >"$tmp/bad.json"
"$agentc" run --provider script --script "$tmp/s.jsonl" --output-schema "$tmp/bad.json" hi \
  >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 3 ] || fail "bad schema: exit $rc, expected 3"
grep -q "output schema: .*frobnicate" "$tmp/err" || fail "bad schema message: $(cat "$tmp/err")"
"$agentc" run --provider script --script "$tmp/s.jsonl" --output-schema "$tmp/none.json" hi \
  2>"$tmp/err"; rc=$?
[ $rc -eq 3 ] || fail "missing schema file: exit $rc, expected 3"
grep -q "cannot read output schema" "$tmp/err" || fail "missing schema message: $(cat "$tmp/err")"

# batch: each session's answer is its accepted JSON
printf '{"id": 1, "prompt": "hi"}\n' >"$tmp/in.jsonl"
"$agentc" batch "$tmp/in.jsonl" --provider script --script "$tmp/s.jsonl" \
  --output-schema "$tmp/schema.json" >"$tmp/b" 2>"$tmp/err" || fail "batch exited $?: $(cat "$tmp/err")"
has_line "$tmp/b" '.id == 1 and .status == "completed" and .answer == "{\"n\": 3}" and .iterations == 3' \
  || fail "batch: $(cat "$tmp/b")"
echo "ok"
