#!/usr/bin/env bash
# W3C trace context on `agentc serve`: a traceparent on a message (or an outside event, or a
# chat completion) makes the turn's invoke_agent span its child, in its trace; the turn's trace
# id is in its user_message payload, the turn_done SSE event and the model requests'
# traceparent; a malformed header is ignored, never an error. Untraced and without a
# traceparent the journal carries no trace id; untraced with one it does, and the turn's model
# requests forward it as it came; one arriving mid-turn is the next turn's.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
need curl
start_server --mode calc
export AGENTC_TEST_KEY="sk-test-$$-secret"
net=(--provider openai --base-url "$base" --model "model-$$" --api-key-env AGENTC_TEST_KEY
  --tools builtin:calculator)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; cleanup' EXIT
"$httpd" --port-file "$tmp/c.port" --log "$tmp/c.log" --mode calc &
pids+=($!)
wait_for test -s "$tmp/c.port" || fail "collector did not start"
endpoint="http://127.0.0.1:$(cat "$tmp/c.port")"
serve() { # NAME ARGS...: agentc serve on its own store; sets $url and $serve_pid
  local name="$1"; shift
  "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/$name.port" --db "$tmp/$name.db" \
    "${net[@]}" "$@" 2>"$tmp/$name.err" &
  serve_pid=$!
  pids+=($serve_pid)
  wait_for test -s "$tmp/$name.port" || fail "serve did not start: $(cat "$tmp/$name.err")"
  url="http://127.0.0.1:$(cat "$tmp/$name.port")"
}
stop() { kill "$serve_pid"; wait "$serve_pid" 2>/dev/null; }
j() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }
# turn SESSION TEXT [TRACEPARENT]: a message, the session's stream read until the turn_done
# of this turn (the stream replays the earlier ones; the frame's data left in $tmp/done)
declare -A turns
turn() {
  local n=$(( ${turns[$1]:-0} + 1 ))
  turns[$1]=$n
  local h=()
  [ -n "${3:-}" ] && h=(-H "traceparent: $3")
  curl -s -N --max-time 20 "$url/v1/sessions/$1/events" >"$tmp/sse" &
  local sse=$!
  sleep 0.2
  code=$(j -o "$tmp/post" -w '%{http_code}' "${h[@]}" -X POST -d "{\"content\": \"$2\"}" \
    "$url/v1/sessions/$1/messages")
  [ "$code" = 202 ] || fail "message: $code $(cat "$tmp/post")"
  # the turn_done frames read whole (a data line can come in more than one read)
  done_n() { [ "$(sed -n '/^event: turn_done$/{n;s/^data: //p}' "$tmp/sse" | jq -c .answer 2>/dev/null | wc -l)" -ge "$n" ]; }
  wait_for done_n || fail "no turn_done: $(cat "$tmp/sse")"
  kill "$sse" 2>/dev/null; wait "$sse" 2>/dev/null
  grep -A1 '^event: turn_done' "$tmp/sse" | sed -n 's/^data: //p' | tail -1 >"$tmp/done"
}
# journal NAME ID: the session's user_message payloads, one a line
journal() { "$agentc" sessions export "local/$2" --db "$tmp/$1.db" | jq -c 'select(.ev == "user_message") | .data'; }

T=4bf92f3577b34da6a3ce929d0e0e4736 P=00f067aa0ba902b7
# ---- traced: the turn is the caller's span's child ----------------------------------------------
OTEL_EXPORTER_OTLP_ENDPOINT="$endpoint" serve s1
j -X POST -d '{"id": "t1"}' "$url/v1/sessions" >/dev/null
turn t1 "What is 17 * 23, then 391 + 19?" "00-$T-$P-01"
jq -e --arg t "$T" '.trace_id == $t' "$tmp/done" >/dev/null || fail "turn_done trace_id: $(cat "$tmp/done")"
jq -r '.headers.traceparent // empty' "$tmp/requests" | tail -3 | grep -c "^00-$T-" | grep -qx 3 \
  || fail "model requests not in the caller's trace: $(jq -r '.headers.traceparent // empty' "$tmp/requests" | tail -3)"
# malformed headers are ignored: upper-case hex, an all-zero trace id, version ff, short
for bad in "00-${T^^}-$P-01" "00-00000000000000000000000000000000-$P-01" "ff-$T-$P-01" "00-$T-$P"; do
  turn t1 "What is 1 * 2, then 3 + 4?" "$bad"
  tid=$(jq -r '.trace_id // empty' "$tmp/done")
  [[ "$tid" =~ ^[0-9a-f]{32}$ ]] && [ "$tid" != "$T" ] || fail "a bad traceparent '$bad' was taken: $tid"
done
stop
journal s1 t1 >"$tmp/um1"
[ "$(wc -l <"$tmp/um1")" -eq 5 ] || fail "user messages: $(cat "$tmp/um1")"
jq -e -s --arg t "$T" '.[0].trace_id == $t and (.[1:] | all(.trace_id | test("^[0-9a-f]{32}$")))' "$tmp/um1" >/dev/null \
  || fail "user_message trace ids: $(cat "$tmp/um1")"
jq -c '.body.resourceSpans[].scopeSpans[].spans[] | select(.name | startswith("invoke_agent"))' "$tmp/c.log" >"$tmp/turns"
jq -e -s --arg t "$T" --arg p "$P" 'map(select(.traceId == $t)) | length == 1 and .[0].parentSpanId == $p' "$tmp/turns" >/dev/null \
  || fail "the turn's span is not the caller's child: $(jq -c '{traceId, parentSpanId}' "$tmp/turns")"
jq -e -s 'map(select(has("parentSpanId"))) | length == 1' "$tmp/turns" >/dev/null \
  || fail "a turn with a bad traceparent has a parent: $(jq -c '{traceId, parentSpanId}' "$tmp/turns")"
# each turn's span is in the trace its user_message names
jq -e -s --slurpfile um "$tmp/um1" '(map(.traceId) | sort) == ($um | map(.trace_id) | sort)' "$tmp/turns" >/dev/null \
  || fail "span traces and user_message trace ids differ"

# ---- untraced: no trace id, unless a traceparent came --------------------------------------------
serve s2
j -X POST -d '{"id": "u1"}' "$url/v1/sessions" >/dev/null
turn u1 "What is 17 * 23, then 391 + 19?"
jq -e 'has("trace_id") | not' "$tmp/done" >/dev/null || fail "untraced turn_done has a trace id: $(cat "$tmp/done")"
[ -z "$(tail -3 "$tmp/requests" | jq -r '.headers.traceparent // empty')" ] || fail "traceparent sent untraced: $(tail -3 "$tmp/requests" | jq -c .headers)"
n0=$(wc -l <"$tmp/requests")
turn u1 "What is 1 * 2, then 3 + 4?" "00-$T-$P-01"
jq -e --arg t "$T" '.trace_id == $t' "$tmp/done" >/dev/null || fail "untraced turn_done with a traceparent: $(cat "$tmp/done")"
# untraced, the received traceparent is forwarded as it came on the turn's model requests
tail -n +$((n0 + 1)) "$tmp/requests" | jq -r '.headers.traceparent // "none"' | sort -u >"$tmp/fwd"
[ "$(cat "$tmp/fwd")" = "00-$T-$P-01" ] || fail "untraced, the model requests forwarded: $(tr "\n" " " <"$tmp/fwd")"
n0=$(wc -l <"$tmp/requests")
turn u1 "What is 2 * 2, then 3 + 4?"
[ "$(wc -l <"$tmp/requests")" -gt "$n0" ] && [ -z "$(tail -n +$((n0 + 1)) "$tmp/requests" | jq -r '.headers.traceparent // empty')" ] \
  || fail "the traceparent of the turn before was forwarded again: $(tail -n +$((n0 + 1)) "$tmp/requests" | jq -c .headers)"
stop
# a traceparent arriving while a turn runs applies to the next turn (a slow model: the second
# message is enqueued behind the first turn); sampled flag as it came
"$httpd" --port-file "$tmp/slow.port" --log "$tmp/slow.log" --mode calc --latency 300 &
pids+=($!)
wait_for test -s "$tmp/slow.port" || fail "the slow model did not start"
net_slow=(--provider openai --base-url "http://127.0.0.1:$(cat "$tmp/slow.port")/v1" --model "model-$$"
  --api-key-env AGENTC_TEST_KEY --tools builtin:calculator)
T2=0af7651916cd43dd8448eb211c80319c P2=b7ad6b7169203331
# mid_turn NAME [ENV...]: on a serve of its own (ENV: its environment), a first message and,
# while its turn runs, a second one enqueued with a traceparent; the model's requests of each
# turn in $tmp/NAME.first and $tmp/NAME.next (the first turn: three requests, two tool calls)
mid_turn() {
  local name="$1"; shift
  : >"$tmp/slow.log"
  env "$@" "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/$name.port" --db "$tmp/$name.db" \
    "${net_slow[@]}" 2>"$tmp/$name.err" &
  serve_pid=$!
  pids+=($serve_pid)
  wait_for test -s "$tmp/$name.port" || fail "serve did not start: $(cat "$tmp/$name.err")"
  url="http://127.0.0.1:$(cat "$tmp/$name.port")"
  j -X POST -d '{"id": "m1"}' "$url/v1/sessions" >/dev/null
  curl -s -N --max-time 20 "$url/v1/sessions/m1/events" >"$tmp/sse3" &
  local sse=$!
  sleep 0.2
  code=$(j -o /dev/null -w '%{http_code}' -X POST -d '{"content": "What is 5 * 6, then 30 + 1?"}' "$url/v1/sessions/m1/messages")
  [ "$code" = 202 ] || fail "first message: $code"
  sleep 0.1
  code=$(j -o "$tmp/post" -w '%{http_code}' -H "traceparent: 00-$T2-$P2-00" -X POST \
    -d '{"content": "What is 7 * 8, then 56 + 1?", "if_busy": "enqueue"}' "$url/v1/sessions/m1/messages")
  [ "$code" = 202 ] || fail "message mid-turn: $code $(cat "$tmp/post")"
  two_done() { [ "$(sed -n '/^event: turn_done$/{n;s/^data: //p}' "$tmp/sse3" | jq -c .answer 2>/dev/null | wc -l)" -ge 2 ]; }
  wait_for two_done || fail "no second turn_done: $(cat "$tmp/sse3")"
  kill "$sse" 2>/dev/null; wait "$sse" 2>/dev/null
  stop
  [ "$(wc -l <"$tmp/slow.log")" -ge 4 ] || fail "model requests: $(wc -l <"$tmp/slow.log")"
  head -3 "$tmp/slow.log" >"$tmp/$name.first"
  tail -n +4 "$tmp/slow.log" >"$tmp/$name.next"
}
mid_turn s3
[ -z "$(jq -r '.headers.traceparent // empty' "$tmp/s3.first")" ] \
  || fail "the turn under way took a traceparent sent during it: $(jq -c .headers "$tmp/s3.first")"
jq -r '.headers.traceparent // "none"' "$tmp/s3.next" | sort -u >"$tmp/fwd"
[ "$(cat "$tmp/fwd")" = "00-$T2-$P2-00" ] || fail "the next turn forwarded: $(cat "$tmp/fwd")"
# traced: the next turn (begun as the first ended, in one event) is a span of its own, the
# received parent's child
: >"$tmp/c.log"
mid_turn s4 OTEL_EXPORTER_OTLP_ENDPOINT="$endpoint" OTEL_BSP_SCHEDULE_DELAY=100
jq -c '.body.resourceSpans[].scopeSpans[].spans[] | select(.name | startswith("invoke_agent"))' "$tmp/c.log" >"$tmp/turns4"
jq -e -s --arg t "$T2" --arg p "$P2" 'length == 2 and (map(select(.traceId == $t)) | length == 1 and .[0].parentSpanId == $p)
  and (map(select(.traceId != $t)) | length == 1 and (.[0] | has("parentSpanId") | not))' "$tmp/turns4" >/dev/null \
  || fail "traced, the turns of a message sent mid-turn: $(jq -c '{traceId, parentSpanId}' "$tmp/turns4")"
jq -e -s --arg t "$T2" 'length > 0 and all(.headers.traceparent // "" | test("^00-" + $t + "-[0-9a-f]{16}-01$"))' \
  "$tmp/s4.next" >/dev/null || fail "traced, the next turn's requests: $(jq -r '.headers.traceparent // "none"' "$tmp/s4.next")"
jq -e -s --arg t "$T2" 'all(.headers.traceparent // "" | contains($t) | not)' "$tmp/s4.first" >/dev/null \
  || fail "traced, the turn under way took the trace sent during it"
journal s2 u1 >"$tmp/um2"
jq -e -s --arg t "$T" '.[0] == {"text": "What is 17 * 23, then 391 + 19?"} and .[1].trace_id == $t' "$tmp/um2" >/dev/null \
  || fail "untraced journal: $(cat "$tmp/um2")"
# ---- a traced session's MCP calls over HTTP carry its traceparent; untraced, none ----------------
if command -v node >/dev/null; then
  node "$(dirname "$0")/otel_mcp_server.cjs" "$tmp/mcp.port" "$tmp/mcp.log" &
  pids+=($!)
  wait_for test -s "$tmp/mcp.port" || fail "the MCP server did not start"
  printf '{"mcp": [{"name": "fake", "url": "http://127.0.0.1:%s/mcp"}]}\n' "$(cat "$tmp/mcp.port")" >"$tmp/tools.json"
  printf '%s\n' '{"tool_calls": [{"id": "c1", "name": "fake::ping", "arguments": "{}"}]}' '{"content": "done"}' >"$tmp/script"
  : >"$tmp/c.log"
  OTEL_EXPORTER_OTLP_ENDPOINT="$endpoint" "$agentc" run --provider script --script "$tmp/script" \
    --tools "$tmp/tools.json" --no-store --jsonl hi >"$tmp/m.out" 2>"$tmp/m.err" || fail "mcp run: $(cat "$tmp/m.err")"
  tid=$(jq -r 'select(.type == "done") | .trace_id' "$tmp/m.out")
  tp=$(jq -r 'select(.method == "tools/call") | .traceparent' "$tmp/mcp.log")
  [[ "$tp" =~ ^00-$tid-([0-9a-f]{16})-01$ ]] || fail "the MCP call's traceparent '$tp' (trace $tid)"
  jq -e -s --arg s "${BASH_REMATCH[1]}" '[.[].body.resourceSpans[].scopeSpans[].spans[] | select(.spanId == $s)] | length == 1
    and .[0].name == "execute_tool fake::ping"' "$tmp/c.log" >/dev/null \
    || fail "the MCP call's traceparent names no execute_tool span of the call"
  jq -e -s '[.[].body.resourceSpans[].scopeSpans[].spans[] | select(.name == "execute_tool fake::ping")] | length == 1 and
    (.[0].attributes | any(.key == "agentc.mcp.server" and .value.stringValue == "fake"))' "$tmp/c.log" >/dev/null \
    || fail "the MCP call's span does not name its server"
  jq -e -s 'map(select(.method != "tools/call")) | all(.traceparent == null)' "$tmp/mcp.log" >/dev/null \
    || fail "a traceparent on a request of no call: $(cat "$tmp/mcp.log")"
  : >"$tmp/mcp.log"
  "$agentc" run --provider script --script "$tmp/script" --tools "$tmp/tools.json" --no-store hi >/dev/null 2>&1 \
    || fail "untraced mcp run"
  jq -e -s 'length > 0 and all(.traceparent == null)' "$tmp/mcp.log" >/dev/null || fail "an untraced MCP call sent a traceparent"
  # untraced on serve, a received traceparent is forwarded on the turn's MCP call as it came
  : >"$tmp/mcp.log"
  "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/s5.port" --db "$tmp/s5.db" --provider script \
    --script "$tmp/script" --tools "$tmp/tools.json" 2>"$tmp/s5.err" &
  serve_pid=$!
  pids+=($serve_pid)
  wait_for test -s "$tmp/s5.port" || fail "serve did not start: $(cat "$tmp/s5.err")"
  url="http://127.0.0.1:$(cat "$tmp/s5.port")"
  j -X POST -d '{"id": "p1"}' "$url/v1/sessions" >/dev/null
  turn p1 "ping it" "00-$T-$P-01"
  stop
  jq -e -s --arg tp "00-$T-$P-01" 'map(select(.method == "tools/call")) | length == 1 and .[0].traceparent == $tp' \
    "$tmp/mcp.log" >/dev/null || fail "untraced, the MCP call forwarded: $(cat "$tmp/mcp.log")"
fi

# an untraced run's journal is as it was: no trace id anywhere
"$agentc" run "${net[@]}" --db "$tmp/r.db" "What is 2 * 3, then 6 + 1?" >/dev/null 2>"$tmp/r.err" || fail "run: $(cat "$tmp/r.err")"
rid=$(sed -n 's/^agentc: session //p' "$tmp/r.err")
"$agentc" sessions export "$rid" --db "$tmp/r.db" >"$tmp/r.jsonl" || fail "export"
! grep -q trace_id "$tmp/r.jsonl" || fail "an untraced run's journal names a trace"
echo ok
