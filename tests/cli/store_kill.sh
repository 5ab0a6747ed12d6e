#!/usr/bin/env bash
# Crash recovery: AGENTC_KILL_TRIALS (default 100, as ctest runs it) scripted sessions with
# tools are killed with SIGKILL at a random moment (0 to AGENTC_KILL_MAX_MS, default 400 ms,
# into the run) and resumed. Two tools append
# "SESSION CALL" to a log: `append` (not idempotent) and `idem` ("idempotent": true).
# Every session must complete with the final answer; no call of `append` may run twice;
# every tool call of the conversation has exactly one result, among the messages right
# after the assistant message that asked for it (valid for the OpenAI API). Each run is bounded
# (timeout) and the whole test has a ctest TIMEOUT.
agentc="$1"
. "$(dirname "$0")/lib.sh"
need jq
trials=${AGENTC_KILL_TRIALS:-100}
export AGENTC_DB="$tmp/sessions.db"
cat >"$tmp/tools.json" <<JSON
{"tools": [
 {"name": "append", "description": "appends its call id", "timeout": "10s",
  "command": ["sh", "-c", "cat >/dev/null; echo \"\$AGENTC_SESSION_ID \$AGENTC_TOOL_CALL_ID\" >>'$tmp/append.log'; sleep 0.05; echo appended"]},
 {"name": "idem", "description": "appends its call id, may run again", "idempotent": true, "timeout": "10s",
  "command": ["sh", "-c", "cat >/dev/null; echo \"\$AGENTC_SESSION_ID \$AGENTC_TOOL_CALL_ID\" >>'$tmp/idem.log'; sleep 0.05; echo same"]}
]}
JSON
cat >"$tmp/script.jsonl" <<'JSON'
{"tool_calls": [{"id": "a1", "name": "append", "arguments": "{}"}, {"id": "i1", "name": "idem", "arguments": "{}"}]}
{"content": "one more", "tool_calls": [{"id": "a2", "name": "append", "arguments": "{}"}, {"id": "a3", "name": "append", "arguments": "{}"}]}
{"content": "all done"}
JSON
touch "$tmp/append.log" "$tmp/idem.log"
opts=(--provider script --script "$tmp/script.jsonl" --tools "$tmp/tools.json")
RANDOM=$$
resumed=0
for i in $(seq 1 "$trials"); do
  id="k$i"
  "$agentc" run "${opts[@]}" --session "$id" go >/dev/null 2>&1 & # killed below: bounded
  pid=$!
  ms=$((RANDOM % ${AGENTC_KILL_MAX_MS:-400})) # slower builds (sanitizers) need a wider window
  sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  # what the store holds: nothing (killed before the session was created, or before the first
  # trial's run made the store: a slow machine), a session whose prompt never reached it, one
  # stopped mid-turn, or a finished one
  if ! "$agentc" sessions show "$id" --json >"$tmp/show" 2>"$tmp/err"; then
    grep -Eq "has no session|$id: no store at " "$tmp/err" || fail "trial $i: show: $(cat "$tmp/err")"
    timeout 20 "$agentc" run "${opts[@]}" --session "$id" go >/dev/null 2>"$tmp/err" \
      || fail "trial $i: run again: $(cat "$tmp/err")"
  elif [ "$(jq '.session.conversation.messages | length' "$tmp/show")" = 0 ]; then
    timeout 20 "$agentc" run "${opts[@]}" --session "$id" go >/dev/null 2>"$tmp/err" \
      || fail "trial $i: run again: $(cat "$tmp/err")"
  else
    timeout 20 "$agentc" resume "$id" "${opts[@]}" >"$tmp/out" 2>"$tmp/err" \
      || fail "trial $i: resume exit $?: $(cat "$tmp/err")"
    grep -q "nothing to finish" "$tmp/out" || resumed=$((resumed + 1))
  fi
  "$agentc" sessions show "$id" --json >"$tmp/show" || fail "trial $i: show after resume"
  jq -e '.status == "idle" and .at_rest and .session.answer == "all done"' "$tmp/show" >/dev/null \
    || fail "trial $i: did not complete: $(jq -c '{status, at_rest, events, session}' "$tmp/show") resume: $(cat "$tmp/out" 2>/dev/null)"
  # every call has exactly one result, among the messages right after the one that asked for it
  jq -e '.session.conversation as $c
         | ($c.tool_calls | all(.state != "none"))
           and ([$c.messages[] | select(.role == "tool") | .tool_call_id] | (length == (unique | length)))
           and ([$c.messages[] | select(.role == "tool")] | length) == ($c.tool_calls | length)
           and ([range(0; $c.messages | length) as $k | $c.messages[$k]
                 | select(.role == "assistant" and (.tool_calls // [] | length) > 0)
                 | (.tool_calls | sort) == ([$c.messages[$k + 1 : $k + 1 + (.tool_calls | length)][] | .tool_call_id] | sort)]
                | all)' "$tmp/show" >/dev/null \
    || fail "trial $i: tool calls not answered exactly once: $(jq -c .session.conversation.messages "$tmp/show")"
done
# no non-idempotent call ran twice (a call that was interrupted may have run once or not)
dups=$(sort "$tmp/append.log" | uniq -d)
[ -z "$dups" ] || fail "non-idempotent calls ran twice: $dups"
[ "$(wc -l <"$tmp/append.log")" -ge "$trials" ] || fail "the append tool ran too rarely"
# the store lists every session, at rest
[ "$("$agentc" sessions list --json | jq -s 'map(select(.at_rest and .status == "idle")) | length')" -eq "$trials" ] \
  || fail "sessions list"
echo "ok: $trials trials, $resumed resumed mid-turn"
