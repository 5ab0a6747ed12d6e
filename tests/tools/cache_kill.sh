#!/usr/bin/env bash
# The result cache across crashes: AGENTC_KILL_TRIALS (default 30) stored sessions are killed
# with SIGKILL at a random moment (0 to AGENTC_KILL_MAX_MS, default 700 ms) and resumed. The
# cached tool `lookup` ("idempotent": true) answers l2 and l3 from l1's result; turn 2 runs
# one call at a time (max_parallel_tools 1) with a 0.3 s `nap` first, so a kill often finds a
# hit still waiting. After the resume: the session completes, every call has exactly one
# result, the lookups all have the same result, and a call journaled as cached names a call
# that ran before it (not from the cache) with that result;
# the journal with its hits replays (agentc replay --check).
agentc="$1"
. "$(dirname "$0")/../cli/lib.sh"
need jq
trials=${AGENTC_KILL_TRIALS:-30}
export AGENTC_DB="$tmp/sessions.db"
cat >"$tmp/tools.json" <<JSON
{"tools": [
 {"name": "lookup", "description": "looks up", "idempotent": true, "cache": {"ttl": "10m"},
  "command": ["sh", "-c", "cat >/dev/null; echo \"\$AGENTC_SESSION_ID \$AGENTC_TOOL_CALL_ID\" >>'$tmp/ledger'; echo value"]},
 {"name": "nap", "description": "waits", "idempotent": true,
  "command": ["sh", "-c", "cat >/dev/null; sleep 0.3; echo rested"]}
]}
JSON
cat >"$tmp/script.jsonl" <<'JSON'
{"tool_calls": [{"id": "l1", "name": "lookup", "arguments": "{\"q\": 1}"}]}
{"tool_calls": [{"id": "n1", "name": "nap", "arguments": "{}"}, {"id": "l2", "name": "lookup", "arguments": "{\"q\": 1.0}"}]}
{"tool_calls": [{"id": "l3", "name": "lookup", "arguments": "{\"q\": 1}"}]}
{"content": "all done"}
JSON
touch "$tmp/ledger"
opts=(--provider script --script "$tmp/script.jsonl" --tools "$tmp/tools.json" --param max_parallel_tools=1)
RANDOM=$$
hits=0
for i in $(seq 1 "$trials"); do
  id="c$i"
  "$agentc" run "${opts[@]}" --session "$id" go >/dev/null 2>&1 & # killed below: bounded
  pid=$!
  ms=$((RANDOM % ${AGENTC_KILL_MAX_MS:-700}))
  sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if ! "$agentc" sessions show "$id" --json >"$tmp/show" 2>"$tmp/err" \
     || [ "$(jq '.session.conversation.messages | length' "$tmp/show")" = 0 ]; then
    timeout 20 "$agentc" run "${opts[@]}" --session "$id" go >/dev/null 2>"$tmp/err" \
      || fail "trial $i: run again: $(cat "$tmp/err")"
  else
    timeout 20 "$agentc" resume "$id" "${opts[@]}" >/dev/null 2>"$tmp/err" \
      || fail "trial $i: resume exit $?: $(cat "$tmp/err")"
  fi
  "$agentc" sessions show "$id" --json >"$tmp/show" || fail "trial $i: show after resume"
  jq -e '.status == "idle" and .session.answer == "all done"' "$tmp/show" >/dev/null \
    || fail "trial $i: did not complete: $(jq -c '{status, session}' "$tmp/show")"
  jq -e '.session.conversation as $c
         | ([$c.messages[] | select(.role == "tool") | .tool_call_id] | (length == (unique | length)))
           and ([$c.messages[] | select(.role == "tool")] | length) == ($c.tool_calls | length)
           and ([$c.tool_calls[] | select(.name == "lookup") | .result] | unique == ["value\n"])' \
    "$tmp/show" >/dev/null \
    || fail "trial $i: results: $(jq -c .session.conversation.tool_calls "$tmp/show")"
  "$agentc" sessions export "$id" -o "$tmp/j.jsonl" --force 2>/dev/null || fail "trial $i: export"
  # a hit names the call its result came from, and that call completed before it
  n=$(jq -s '[.[] | select(.ev == "tool.completed")] as $c
              | [$c[] | select(.data.cached == true)] as $h
              | if ($h | all(. as $x | any($c[]; .n < $x.n and .data.id == $x.data.cached_from
                                          and .data.ok and (.data.cached | not)
                                          and .data.content == $x.data.content)))
                then ($h | length) else -1 end' "$tmp/j.jsonl")
  [ "$n" -ge 0 ] || fail "trial $i: a hit without a source that ran before it: $(grep cached "$tmp/j.jsonl")"
  [ "$n" = "$(grep -c '"cached":true' "$tmp/j.jsonl")" ] || fail "trial $i: hits miscounted"
  hits=$((hits + n))
  "$agentc" replay "$tmp/j.jsonl" --check >"$tmp/r" 2>&1 || fail "trial $i: replay --check: $(cat "$tmp/r")"
done
[ "$hits" -gt 0 ] || fail "no trial answered a call from the cache"
echo "ok: $trials trials, $hits hits journaled"
