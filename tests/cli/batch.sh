#!/usr/bin/env bash
# `agentc batch`: 200 sessions at concurrency 50 against the loopback server,
# one in ten failing by design (401): every session reported exactly once,
# failures isolated, successes with the right answers; --ordered and
# --journal-dir.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$"
net=(--base-url "$base" --model m --api-key-env AGENTC_TEST_KEY --tools builtin:calculator)

n=200
for i in $(seq 1 $n); do
  if [ $((i % 10)) -eq 3 ]; then
    printf '{"id": "s%d", "prompt": "FAIL401 %d + 1"}\n' "$i" "$i"
  else
    printf '{"id": "s%d", "prompt": "What is %d * 3, then %d + 7?"}\n' "$i" "$i" "$((i * 3))"
  fi
done >"$tmp/in.jsonl"

check_results() { # FILE
  local f="$1"
  every_line_json "$f"
  [ "$(wc -l <"$f")" -eq $n ] || fail "$(wc -l <"$f") result lines, expected $n"
  [ "$(jq -r .id "$f" | sort -u | wc -l)" -eq $n ] || fail "a session was reported twice or never"
  jq -r 'select(.status == "completed") | "\(.id) \(.answer) \(.iterations) \(.tool_calls)"' "$f" | sort >"$tmp/ok"
  for i in $(seq 1 $n); do
    [ $((i % 10)) -eq 3 ] && continue
    echo "s$i The answer is $((i * 3 + 7)). 3 2"
  done | sort >"$tmp/ok.expected"
  diff "$tmp/ok.expected" "$tmp/ok" >"$tmp/diff" || fail "wrong successes: $(head -5 "$tmp/diff")"
  jq -r 'select(.status != "completed") | .id' "$f" | sort >"$tmp/bad"
  for i in $(seq 3 10 $n); do echo "s$i"; done | sort >"$tmp/bad.expected"
  diff "$tmp/bad.expected" "$tmp/bad" >/dev/null || fail "the failures are not exactly the FAIL401 sessions"
  jq -e -s 'all(.[] | select(.status != "completed"); .status == "failed" and (.error | test("401")))' "$f" \
    >/dev/null || fail "failure lines must say failed with the 401 error"
}

"$agentc" batch "$tmp/in.jsonl" "${net[@]}" --concurrency 50 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "batch with failures should exit 1, got $rc: $(head -3 "$tmp/err")"
check_results "$tmp/out"
[ ! -s "$tmp/err" ] || fail "no progress bar when stderr is not a terminal: $(head -c 200 "$tmp/err")"
[ "$(wc -l <"$tmp/requests")" -eq $((180 * 3 + 20)) ] || fail "$(wc -l <"$tmp/requests") LLM calls, expected 560"

# --ordered: input order; --journal-dir: one replayable journal per session
"$agentc" batch "$tmp/in.jsonl" "${net[@]}" --concurrency 50 --ordered --journal-dir "$tmp/journals" \
  >"$tmp/out2" 2>/dev/null
[ $? -eq 1 ] || fail "ordered batch exit"
check_results "$tmp/out2"
[ "$(jq -r .id "$tmp/out2" | tr '\n' ' ')" = "$(seq -f 's%g' 1 $n | tr '\n' ' ')" ] || fail "--ordered is not input order"
[ "$(ls "$tmp/journals" | wc -l)" -eq $n ] || fail "expected $n journals"
for i in 1 3 200; do
  j=$(jq -r --arg id "s$i" 'select(.id == $id) | .journal' "$tmp/out2")
  [ -f "$j" ] || fail "result s$i names no journal"
  "$agentc" replay "$j" --check >/dev/null || fail "journal of s$i does not replay"
done
# comment-, whitespace- and reorder-only edits of the spec: no divergence (a
# sample: the sessions repeat a few scripts)
bash tests/cli/spec_edits.sh "$agentc" $(ls -d "$tmp"/journals/* | head -n 12) >/dev/null || fail "spec edits"

# every session succeeding: exit 0; a bad input line: exit 3 before anything runs
# (grep -m stops by itself: with pipefail, `| head` could fail the pipeline
# whenever grep was still writing when head exited)
grep -v -m 20 FAIL401 "$tmp/in.jsonl" | "$agentc" batch - "${net[@]}" --concurrency 4 >"$tmp/out3" \
  || fail "all-success batch should exit 0"
[ "$(wc -l <"$tmp/out3")" -eq 20 ] || fail "all-success batch: $(wc -l <"$tmp/out3") results, expected 20"
[ "$(jq -r .status "$tmp/out3" | sort -u)" = "completed" ] || fail "all-success statuses"
printf '{"id": 1, "prompt": "1 + 1"}\nnot json\n' >"$tmp/bad.jsonl"
"$agentc" batch "$tmp/bad.jsonl" "${net[@]}" >/dev/null 2>"$tmp/err"; [ $? -eq 3 ] || fail "bad input should exit 3"
grep -q "bad.jsonl:2:" "$tmp/err" || fail "bad input message should name FILE:LINE"
# journals are named after the input line, as the help says (a blank line counts)
printf '\n{"id": "a", "prompt": "2 + 2"}\n\n{"prompt": "3 + 3"}\n' >"$tmp/blank.jsonl"
"$agentc" batch "$tmp/blank.jsonl" "${net[@]}" --journal-dir "$tmp/jd" >"$tmp/out4" 2>/dev/null \
  || fail "batch with blank lines"
"$agentc" batch --help | grep -q 'DIR/b<line>.journal' || fail "help no longer names b<line>.journal"
[ -f "$tmp/jd/b2.journal" ] && [ -f "$tmp/jd/b4.journal" ] \
  || fail "journals not named after their input lines: $(ls "$tmp/jd")"
has_line "$tmp/out4" '.id == "a" and (.journal | endswith("/b2.journal"))' || fail "journal of a: $(cat "$tmp/out4")"
has_line "$tmp/out4" '.id == 4 and (.journal | endswith("/b4.journal"))' || fail "journal of line 4"
# duplicate ids are refused before anything runs, naming both lines
printf '{"id": "x", "prompt": "1 + 1"}\n{"id": "y", "prompt": "1 + 1"}\n{"id": "x", "prompt": "2 + 2"}\n' \
  >"$tmp/dup.jsonl"
"$agentc" batch "$tmp/dup.jsonl" "${net[@]}" >"$tmp/out5" 2>"$tmp/err"; rc=$?
[ $rc -eq 3 ] || fail "duplicate ids: exit $rc, expected 3"
[ ! -s "$tmp/out5" ] || fail "duplicate ids: sessions ran"
grep -q 'dup.jsonl:3: duplicate id "x" (first on line 1)' "$tmp/err" || fail "duplicate id message: $(cat "$tmp/err")"
printf '{"prompt": "1 + 1"}\n{"id": 1, "prompt": "2 + 2"}\n' >"$tmp/dup2.jsonl" # line 1's id is 1
"$agentc" batch "$tmp/dup2.jsonl" "${net[@]}" >/dev/null 2>&1; [ $? -eq 3 ] || fail "implicit duplicate id accepted"
# at an interrupt, sessions not started yet get the same fields as the others
for i in $(seq 1 20); do printf '{"id": %d, "prompt": "SLOW %d"}\n' "$i" "$i"; done >"$tmp/slow.jsonl"
"$agentc" batch "$tmp/slow.jsonl" "${net[@]}" --concurrency 2 >"$tmp/out6" 2>/dev/null &
pid=$!
for _ in $(seq 1 600); do grep -q . "$tmp/requests" 2>/dev/null && break; sleep 0.05; done
sleep 0.3
kill -TERM $pid; wait $pid; rc=$?
[ $rc -eq 143 ] || fail "batch SIGTERM: exit $rc, expected 143"
[ "$(wc -l <"$tmp/out6")" -eq 20 ] || fail "batch SIGTERM: $(wc -l <"$tmp/out6") results, expected 20"
jq -s -e 'all(.[]; has("iterations") and has("tool_calls") and has("usage") and .status == "cancelled")' \
  "$tmp/out6" >/dev/null || fail "cancelled results lack fields: $(head -3 "$tmp/out6")"
"$agentc" batch "$tmp/in.jsonl" "${net[@]}" --concurrency 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad concurrency"
# a descriptor limit too small for the concurrency: lowered with a note, every session still
# answered (before, most failed with "Couldn't connect to server")
grep -v FAIL401 "$tmp/in.jsonl" | head -60 >"$tmp/fd.jsonl"
(ulimit -n 60 && "$agentc" batch "$tmp/fd.jsonl" "${net[@]}" --concurrency 60 --journal-dir "$tmp/jfd") \
  >"$tmp/outfd" 2>"$tmp/errfd" || fail "batch under ulimit -n 60 failed: $(head -3 "$tmp/errfd")"
grep -q "concurrency 60 lowered to" "$tmp/errfd" || fail "no note of the lowered concurrency"
[ "$(jq -r 'select(.status == "completed") | .id' "$tmp/outfd" | wc -l)" -eq 60 ] \
  || fail "under ulimit -n 60: $(jq -r .status "$tmp/outfd" | sort | uniq -c | tr '\n' ' ')"
echo "ok"
