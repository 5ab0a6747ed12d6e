#!/usr/bin/env bash
# Guardrails (docs/spec-language.md), the real binary against the loopback model server with
# examples/specs/guardrails.fsm: an input guardrail that trips fails the turn before any model
# call (the server sees no request); an output guardrail that trips fails it after the answer,
# which never reaches --jsonl or the terminal; a passing pair lets the answer out once; a
# guardrail that fails or times out takes the failure path; a spec's own tripped transition;
# the journals replay with --check.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$-secret"
net=(--provider openai --base-url "$base" --model "model-$$" --api-key-env AGENTC_TEST_KEY
  --tools builtin:calculator)
spec="$PWD/examples/specs/guardrails.fsm"
guard() { # guard NAME PATTERN REASON [TIMEOUT]: trips when stdin's text matches PATTERN
  printf '{"name": "%s", "description": "guardrail", "parameters": {"type": "object"}%s,
    "command": ["sh", "-c", "if jq -e %s >/dev/null; then echo %s; else echo %s; fi"]}' \
    "$1" "${4:+, \"timeout\": \"$4\"}" "'.text | test(\\\"$2\\\")'" \
    "'{\\\"pass\\\": false, \\\"reason\\\": \\\"$3\\\"}'" "'{\\\"pass\\\": true, \\\"reason\\\": \\\"ok\\\"}'"
}
printf '{"tools": [%s, %s]}\n' "$(guard check_input secret "asks for a secret")" \
  "$(guard check_answer 42 "gives the answer away")" >"$tmp/tools.json"
jq -e . "$tmp/tools.json" >/dev/null || fail "bad tools file: $(cat "$tmp/tools.json")"
run() { # run NAME TOOLS PROMPT [SPEC]: --jsonl output, stderr, exit status, journal
  "$agentc" run --spec "${4:-$spec}" "${net[@]}" --tools "$2" --jsonl --journal "$tmp/$1.journal" \
    "$3" >"$tmp/$1.out" 2>"$tmp/$1.err" </dev/null
  echo $? >"$tmp/$1.rc"
}
requests() { [ -f "$tmp/requests" ] && wc -l <"$tmp/requests" || echo 0; }
replays() {
  "$agentc" replay "$tmp/$1.journal" --check --spec "${2:-$spec}" >"$tmp/$1.check" 2>&1 \
    && grep -q "every transition matches" "$tmp/$1.check" || fail "$1 does not replay: $(tail -3 "$tmp/$1.check")"
}

# ---- input tripwire: failed before any model call ------------------------------------------
run in "$tmp/tools.json" "tell me the secret of 6 * 7"
[ "$(cat "$tmp/in.rc")" = 1 ] || fail "input tripwire: exit $(cat "$tmp/in.rc")"
[ "$(requests)" = 0 ] || fail "input tripwire: the model server saw $(requests) request(s)"
tail -n1 "$tmp/in.out" | jq -e '.type == "done" and .status == "failed" and
  .error == "guardrail check_input: asks for a secret"' >/dev/null || fail "input tripwire: $(tail -n1 "$tmp/in.out")"
grep -q '"ev":"guardrail.tripped"' "$tmp/in.journal" || fail "input tripwire: not journaled"
replays in
# the guardrails' commands are not offered to the model
run offer "$tmp/tools.json" "What is 2 + 3?"
jq -s -e 'map(.body.tools // [] | map(.function.name)) | flatten | (index("calculator") != null) and
  (index("check_input") == null) and (index("check_answer") == null)' "$tmp/requests" >/dev/null \
  || fail "offered tools: $(jq -c '[.body.tools[]?.function.name]' "$tmp/requests" | head -2)"

# ---- output tripwire: the answer (42) never reaches the client -----------------------------
n=$(requests)
run out "$tmp/tools.json" "What is 6 * 7?"
[ "$(cat "$tmp/out.rc")" = 1 ] || fail "output tripwire: exit $(cat "$tmp/out.rc")"
[ "$(requests)" = $((n + 2)) ] || fail "output tripwire: $(( $(requests) - n )) model requests, expected 2"
grep -q 42 "$tmp/out.out" && grep '"type":"text"' "$tmp/out.out" | grep -q 42 \
  && fail "output tripwire: the answer reached --jsonl: $(cat "$tmp/out.out")"
jq -s -e 'map(select(.type == "text")) | length == 0' "$tmp/out.out" >/dev/null \
  || fail "output tripwire: text reached --jsonl: $(cat "$tmp/out.out")"
tail -n1 "$tmp/out.out" | jq -e '.status == "failed" and .error == "guardrail check_answer: gives the answer away"' \
  >/dev/null || fail "output tripwire: $(tail -n1 "$tmp/out.out")"
replays out
# on the terminal's stdout too
"$agentc" run --no-store --spec "$spec" "${net[@]}" --tools "$tmp/tools.json" "What is 6 * 7?" \
  >"$tmp/term.out" 2>"$tmp/term.err" </dev/null
! grep -q "The answer is" "$tmp/term.out" || fail "output tripwire: the answer reached stdout: $(cat "$tmp/term.out")"
grep -q "guardrail check_answer: gives the answer away" "$tmp/term.err" || fail "terminal: $(cat "$tmp/term.err")"

# ---- both pass: the answer goes out once, after the output guardrail -----------------------
run pass "$tmp/tools.json" "What is 2 + 3?"
[ "$(cat "$tmp/pass.rc")" = 0 ] || fail "passing guardrails: exit $(cat "$tmp/pass.rc"): $(cat "$tmp/pass.err")"
[ "$(jq -s -r 'map(select(.type == "text") | .delta) | join("")' "$tmp/pass.out")" = "The answer is 5." ] \
  || fail "passing guardrails: text $(cat "$tmp/pass.out")"
[ "$(grep -c '"ev":"guardrail.passed"' "$tmp/pass.journal")" = 2 ] || fail "passing guardrails: not journaled twice"
replays pass

# ---- a model call that fails mid-answer and is retried: its held part is dropped, unseen ------
printf '%s\n' '{"error": {"status": 503, "message": "unavailable", "retryable": true, "partial": "HALF-ANSWER "}}' \
  '{"content": "FULL ANSWER"}' >"$tmp/retry.jsonl"
"$agentc" run --no-store --spec "$spec" --provider script --script "$tmp/retry.jsonl" --tools "$tmp/tools.json" \
  --param backoff_initial=10ms --jsonl hello >"$tmp/retry.out" 2>"$tmp/retry.err" </dev/null \
  || fail "retry under a guardrail: $(cat "$tmp/retry.err")"
! grep -q 'HALF-ANSWER\|"type":"discarded"' "$tmp/retry.out" || fail "retry: the failed part was shown: $(cat "$tmp/retry.out")"
[ "$(jq -s -r 'map(select(.type == "text") | .delta) | join("")' "$tmp/retry.out")" = "FULL ANSWER" ] \
  || fail "retry: text $(cat "$tmp/retry.out")"

# ---- a guardrail that fails, or times out: the failure path --------------------------------
printf '{"tools": [{"name": "check_input", "description": "g", "parameters": {"type": "object"},
  "command": ["sh", "-c", "exit 3"]}, %s]}\n' "$(guard check_answer 42 x)" >"$tmp/broken.json"
run broken "$tmp/broken.json" "What is 2 + 3?"
tail -n1 "$tmp/broken.out" | jq -e '.status == "failed" and
  .error == "guardrail check_input: the guardrail could not run (its command failed)"' >/dev/null \
  || fail "failing guardrail: $(tail -n1 "$tmp/broken.out")"
printf '{"tools": [{"name": "check_input", "description": "g", "parameters": {"type": "object"},
  "timeout": "300ms", "command": ["sleep", "20"]}, %s]}\n' "$(guard check_answer 42 x)" >"$tmp/slow.json"
n=$(requests); start=$(date +%s)
run slow "$tmp/slow.json" "What is 2 + 3?"
[ $(( $(date +%s) - start )) -lt 10 ] || fail "a guardrail past its timeout was not stopped"
tail -n1 "$tmp/slow.out" | jq -e '.status == "failed" and
  .error == "guardrail check_input: the guardrail could not run (it timed out)"' >/dev/null \
  || fail "guardrail timeout: $(tail -n1 "$tmp/slow.out")"
[ "$(requests)" = "$n" ] || fail "guardrail timeout: the model was called"
printf '{"tools": [{"name": "check_input", "description": "g", "parameters": {"type": "object"},
  "command": ["echo", "yes"]}, %s]}\n' "$(guard check_answer 42 x)" >"$tmp/odd.json"
run odd "$tmp/odd.json" "What is 2 + 3?"
tail -n1 "$tmp/odd.out" | jq -e '.status == "failed" and (.error | test("did not answer"))' >/dev/null \
  || fail "guardrail with a bad answer: $(tail -n1 "$tmp/odd.out")"

# ---- the spec says where a tripped guardrail goes: here, a completed turn with no answer -----
sed 's|^    guardrail output check_answer$|&\n    check_answer -> COMPLETED on guardrail.tripped|' \
  "$spec" >"$tmp/own.fsm"
grep -q 'on guardrail.tripped' "$tmp/own.fsm" || fail "the own-transition edit did not take"
"$agentc" check "$tmp/own.fsm" >"$tmp/own.check" 2>&1 || fail "own transition: $(cat "$tmp/own.check")"
run own "$tmp/tools.json" "What is 6 * 7?" "$tmp/own.fsm"
[ "$(cat "$tmp/own.rc")" = 0 ] || fail "own transition: exit $(cat "$tmp/own.rc"): $(cat "$tmp/own.err")"
tail -n1 "$tmp/own.out" | jq -e '.status == "completed" and .answer == ""' >/dev/null \
  && ! grep -q '"type":"text"' "$tmp/own.out" || fail "own transition: $(cat "$tmp/own.out")"
replays own "$tmp/own.fsm"
# ---- parallel: the model is called at once; the answer waits for the guardrail -------------
sed -e 's|^    guardrail input  check_input$|    guardrail input  check_input parallel|' -e '/guardrail output/d' \
  "$spec" >"$tmp/par.fsm"
"$agentc" check "$tmp/par.fsm" >"$tmp/par.check" 2>&1 || fail "parallel: $(cat "$tmp/par.check")"
grep -q "warning: guardrail 'check_input' is parallel: tools may run (in state 'TOOL_EXECUTING') before it trips" \
  "$tmp/par.check" || fail "parallel: no warning: $(cat "$tmp/par.check")"
printf '{"tools": [{"name": "check_input", "description": "g", "parameters": {"type": "object"},
  "command": ["sh", "-c", "sleep 1; grep -q secret && echo %s || echo %s"]}]}\n' \
  "'{\\\"pass\\\": false, \\\"reason\\\": \\\"a secret\\\"}'" "'{\\\"pass\\\": true}'" >"$tmp/par.json"
jq -e . "$tmp/par.json" >/dev/null || fail "bad tools file: $(cat "$tmp/par.json")"
n=$(requests)
run ptrip "$tmp/par.json" "the secret of 6 * 7?" "$tmp/par.fsm"
[ "$(requests)" -gt "$n" ] || fail "parallel: the model was not called beside the guardrail"
tail -n1 "$tmp/ptrip.out" | jq -e '.status == "failed" and .error == "guardrail check_input: a secret"' \
  >/dev/null || fail "parallel, tripped: $(tail -n1 "$tmp/ptrip.out")"
# the answer's text streamed before the trip is retracted: a discarded line of all its bytes
shown=$(jq -s -r 'map(select(.type == "text") | .text // .delta) | join("")' "$tmp/ptrip.out")
[ -n "$shown" ] || fail "parallel, tripped: no text streamed before the trip: $(cat "$tmp/ptrip.out")"
jq -s -e --argjson n "${#shown}" '(map(select(.type == "discarded")) | length == 1 and .[0].bytes == $n and
  .[0].reason == "guardrail_tripped") and
  (map(.type) | (index("discarded") > rindex("text")))' "$tmp/ptrip.out" >/dev/null \
  || fail "parallel, tripped: the streamed text is not retracted: $(grep -v '"tool' "$tmp/ptrip.out")"
replays ptrip "$tmp/par.fsm"
run ppass "$tmp/par.json" "What is 2 + 3?" "$tmp/par.fsm"
tail -n1 "$tmp/ppass.out" | jq -e '.status == "completed" and .answer == "The answer is 5."' >/dev/null \
  || fail "parallel, passing: $(tail -n1 "$tmp/ppass.out")"
grep -q '"ev":"guardrail.passed"' "$tmp/ppass.journal" || fail "parallel, passing: not journaled"
replays ppass "$tmp/par.fsm"
echo "guardrails: ok"
