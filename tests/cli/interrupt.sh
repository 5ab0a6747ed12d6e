#!/usr/bin/env bash
# Ctrl-C on `agentc run`, while the answer streams and while a tool runs:
# exit 130, the partial answer is printed, the tool process is killed, and the
# journal replays with --check.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
need pgrep
need setsid
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$"
net=(--base-url "$base" --model m --api-key-env AGENTC_TEST_KEY)

# ---- during streaming ---------------------------------------------------------------------
setsid "$agentc" run "${net[@]}" --journal "$tmp/j1" "SLOW: tell a story" >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_for grep -q "word3" "$tmp/out" || fail "no streamed text before the interrupt"
kill -INT "$pid"
wait "$pid"; rc=$?
[ $rc -eq 130 ] || fail "interrupted run exit $rc, expected 130"
grep -q "^word1 word2 word3" "$tmp/out" || fail "partial answer not on stdout: $(cat "$tmp/out")"
! grep -q "word100" "$tmp/out" || fail "the stream was not stopped"
grep -q "interrupted" "$tmp/err" || fail "no interrupt notice on stderr"
"$agentc" replay "$tmp/j1" --check >"$tmp/r" || fail "journal of the interrupted run does not replay"
grep -q "status   ended (cancelled)" "$tmp/r" || fail "replayed status: $(cat "$tmp/r")"

# --jsonl: the done line says cancelled and carries the partial answer
setsid "$agentc" run "${net[@]}" --jsonl "SLOW: again" >"$tmp/jl" 2>/dev/null &
pid=$!
wait_for grep -q "word3" "$tmp/jl" || fail "no streamed jsonl text"
kill -INT "$pid"
wait "$pid"; rc=$?
[ $rc -eq 130 ] || fail "jsonl interrupted exit $rc"
tail -n1 "$tmp/jl" | jq -e '.type == "done" and .status == "cancelled" and (.answer | startswith("word1 word2 word3"))' \
  >/dev/null || fail "jsonl done line: $(tail -n1 "$tmp/jl")"

# ---- during a tool call -------------------------------------------------------------------
marker="30.0$$" # `sleep 30.0PID`: a command line no other process has
no_sleeper() { ! pgrep -f "sleep $marker" >/dev/null; }
cat >"$tmp/tools.json" <<JSON
{"tools": [{"name": "sleeper", "description": "Sleeps", "parameters": {"type": "object"},
            "command": ["sleep", "$marker"]}]}
JSON
setsid "$agentc" run "${net[@]}" --tools "$tmp/tools.json" --journal "$tmp/j2" "TOOLSLEEP now" \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
wait_for pgrep -f "sleep $marker" >/dev/null || fail "the sleeper tool never started: $(cat "$tmp/err")"
grep -q "^-> sleeper" "$tmp/out" || fail "no tool call line"
kill -INT "$pid"
wait "$pid"; rc=$?
[ $rc -eq 130 ] || fail "interrupted tool run exit $rc, expected 130"
wait_for no_sleeper || fail "the tool process survived the interrupt"
"$agentc" replay "$tmp/j2" --check >"$tmp/r" || fail "journal of the interrupted tool run does not replay"
grep -q "status   ended (cancelled)" "$tmp/r" || fail "replayed status after tool interrupt"

# ---- two Ctrl-C in a row still exit 130 and leave nothing behind ----------------------------
setsid "$agentc" run "${net[@]}" --tools "$tmp/tools.json" "TOOLSLEEP twice" >/dev/null 2>&1 &
pid=$!
wait_for pgrep -f "sleep $marker" >/dev/null || fail "the sleeper tool never started (2)"
kill -INT "$pid"; kill -INT "$pid" 2>/dev/null
wait "$pid"; rc=$?
[ $rc -eq 130 ] || fail "double interrupt exit $rc, expected 130"
wait_for no_sleeper || fail "tool process survived a double interrupt"
# ---- SIGKILL during a tool call: nothing can clean up, the tool dies with agentc --------------
setsid "$agentc" run "${net[@]}" --tools "$tmp/tools.json" "TOOLSLEEP killed" >/dev/null 2>&1 &
pid=$!
wait_for pgrep -f "sleep $marker" >/dev/null || fail "the sleeper tool never started (kill -9)"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
wait_for no_sleeper || { pkill -f "sleep $marker"; fail "the tool outlived agentc killed by SIGKILL"; }
# ---- SIGTERM and SIGHUP during a tool call: the same clean stop as Ctrl-C ---------------------
# (setsid: no terminal, so the signal comes only from kill, as from systemd or `timeout`)
for sig in TERM HUP; do
  want=$([ $sig = TERM ] && echo 143 || echo 129)
  setsid "$agentc" run "${net[@]}" --tools "$tmp/tools.json" --journal "$tmp/j$sig" "TOOLSLEEP $sig" \
    >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  wait_for pgrep -f "sleep $marker" >/dev/null || fail "the sleeper tool never started ($sig)"
  kill -$sig "$pid"
  wait "$pid"; rc=$?
  [ $rc -eq $want ] || fail "SIG$sig during a tool: exit $rc, expected $want"
  wait_for no_sleeper || fail "the tool process survived SIG$sig"
  jq -s -e 'map(select(.ev)) | last | .ev == "cancel"' "$tmp/j$sig" >/dev/null \
    || fail "the journal's last event is not cancel after SIG$sig: $(tail -n2 "$tmp/j$sig")"
  "$agentc" replay "$tmp/j$sig" --check >"$tmp/r" || fail "journal after SIG$sig does not replay"
  grep -q "status   ended (cancelled)" "$tmp/r" || fail "replayed status after SIG$sig"
  grep -q "session cancelled" "$tmp/err" || fail "no notice on stderr after SIG$sig: $(cat "$tmp/err")"
done
# SIGTERM while the answer streams: exit 143, the partial answer kept
setsid "$agentc" run "${net[@]}" --jsonl "SLOW: term" >"$tmp/jl" 2>/dev/null &
pid=$!
wait_for grep -q "word3" "$tmp/jl" || fail "no streamed jsonl text (TERM)"
kill -TERM "$pid"
wait "$pid"; rc=$?
[ $rc -eq 143 ] || fail "SIGTERM while streaming: exit $rc, expected 143"
tail -n1 "$tmp/jl" | jq -e '.type == "done" and .status == "cancelled" and (.answer | startswith("word1 word2 word3"))' \
  >/dev/null || fail "jsonl done line after SIGTERM: $(tail -n1 "$tmp/jl")"
# comment-, whitespace- and reorder-only edits of the spec: no divergence
bash tests/cli/spec_edits.sh "$agentc" "$tmp/j1" "$tmp/j2" >/dev/null || fail "spec edits"
echo "ok"
