#!/usr/bin/env bash
# agentc serve against clients that ask too much: what one request may cost the loop, what a
# token may send and hold, and how a request is framed.
#  - GET /v1/sessions/{id} answers a page of the conversation (about 1 MiB, 1000 messages at
#    most), never the whole of a long session; the pages joined are the conversation;
#    ?messages=0 is the summary alone (what the page polls);
#  - events posted count against --events-per-minute, their payload against
#    --max-event-bytes (what the journal keeps and replays at each load);
#  - a token holds at most --streams-per-token SSE streams at once; a closed one frees its slot
#    (at the next ping at the latest);
#  - a session deleted mid-stream tells its live readers: `stopped` (reason `deleted`) ends
#    their stream;
#  - a body framed two ways (two Content-Lengths that differ, Content-Length with
#    Transfer-Encoding) is refused (400, or unanswered): a proxy in front might read it the other way; the
#    "Bearer" scheme is case-insensitive;
#  - no other site may frame the page (frame-ancestors 'none', X-Frame-Options DENY).
set -uo pipefail
agentc=$1
command -v curl >/dev/null && command -v jq >/dev/null || { echo "SKIP: curl and jq needed"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL (bounds.sh:${BASH_LINENO[0]}): $*" >&2; tail -n 5 "$tmp/err" >&2; exit 1; }
wait_for() { for _ in $(seq 1 600); do "$@" && return 0; sleep 0.05; done; return 1; } # 30 s
# serve ARGS...: a server on a free port ($url); the one before is stopped
serve() {
  [ -n "$pid" ] && { kill "$pid"; wait "$pid" 2>/dev/null; }
  rm -f "$tmp/port"
  "$agentc" serve --listen 127.0.0.1:0 --port-file "$tmp/port" "$@" 2>"$tmp/err" &
  pid=$!
  wait_for test -s "$tmp/port" || fail "server did not start"
  url="http://127.0.0.1:$(cat "$tmp/port")"
}
j() { curl -s --max-time 20 -H 'Content-Type: application/json' "$@"; }
code() { curl -s --max-time 20 -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/json' "$@"; }
idle() { [ "$(j "$url/v1/sessions/$1?messages=0" | jq -r .status)" = idle ]; }

# ---- a long session is read a page at a time ----
printf '#!/bin/sh\ncat >/dev/null; echo ok\n' >"$tmp/echo.sh"
chmod +x "$tmp/echo.sh"
jq -n --arg c "$tmp/echo.sh" '{tools: [{name: "echo", description: "echo", parameters: {type: "object"},
  command: [$c], timeout: "10s"}]}' >"$tmp/tools.json"
for t in 0 1 2; do
  jq -cn --arg t $t '("z" * 307200) as $big | {tool_calls: [range(10) | {id: "c\($t)_\(.)", name: "echo",
    arguments: ({p: $big} | tojson)}]}, {content: "done \($t)"}'
done >"$tmp/big.jsonl"
serve --provider script --script "$tmp/big.jsonl" --tools "$tmp/tools.json"
j -X POST -d '{"id": "big"}' "$url/v1/sessions" >/dev/null
for t in 1 2 3; do
  j -X POST -d '{"content": "go"}' "$url/v1/sessions/big/messages" >/dev/null
  sleep 0.2
  wait_for idle big || fail "turn $t did not end"
done
[ "$(code "$url/v1/sessions/big")" = 200 ] || fail "GET: $(head -c 300 "$tmp/body")"
size=$(wc -c <"$tmp/body")
[ "$size" -lt 1500000 ] || fail "one GET answered $size bytes (the session holds about 9 MB)"
jq -e '.messages_total > (.messages | length) and (.next_from | type) == "string"' "$tmp/body" >/dev/null \
  || fail "the first page does not say what follows: $(jq -c '{messages_total, next_from}' "$tmp/body")"
total=$(jq .messages_total "$tmp/body")
cp "$tmp/body" "$tmp/page0"
from=$(jq -r .next_from "$tmp/body") pages=1 split=0
while [ "$from" != null ]; do
  [ "$(code "$url/v1/sessions/big?from=$from")" = 200 ] || fail "page from $from: $(head -c 300 "$tmp/body")"
  [ "$(wc -c <"$tmp/body")" -lt 1500000 ] || fail "the page from $from is $(wc -c <"$tmp/body") bytes"
  case $from in *.*) split=1 ;; esac
  cp "$tmp/body" "$tmp/page$pages"
  from=$(jq -r .next_from "$tmp/body") pages=$((pages + 1))
  [ $pages -lt 100 ] || fail "the pages never end"
done
[ $pages -ge 3 ] && [ $split = 1 ] || fail "$pages pages, split: $split (a message's 3 MB of calls span pages)"
jq -s '[.[].messages[]]' "$tmp"/page* >"$tmp/all"
[ "$(jq length "$tmp/all")" = "$total" ] || fail "the pages hold $(jq length "$tmp/all") of $total messages"
[ "$(jq '[.[].id] | unique | length' "$tmp/all")" = "$total" ] || fail "a message comes twice"
made=$(jq '[.[].tool_calls // [] | .[]] | unique' "$tmp/all")
calls=$(jq -s '[.[].tool_calls[].id] | unique' "$tmp"/page*)
[ "$made" = "$calls" ] && [ "$(jq length <<<"$calls")" -ge 20 ] || fail "the pages' calls: $calls, made: $made"
jq -e '[.[] | select(.role == "assistant" and .content == "done 2")] | length == 1' "$tmp/all" >/dev/null \
  || fail "the last answer is not in the pages"
[ "$(code "$url/v1/sessions/big?limit=2")" = 200 ] && jq -e '(.messages | length) == 2 and .next_from == "2"' "$tmp/body" >/dev/null \
  || fail "limit=2: $(jq -c '{n: (.messages | length), next_from}' "$tmp/body")"
[ "$(code "$url/v1/sessions/big?messages=0")" = 200 ] || fail "messages=0"
jq -e '(has("messages") | not) and .status == "idle" and .answer == "done 2"' "$tmp/body" >/dev/null \
  && [ "$(wc -c <"$tmp/body")" -lt 2000 ] || fail "messages=0: $(head -c 300 "$tmp/body")"
for q in limit=0 limit=1001 from=-1 from=x from=1.x messages=2; do
  [ "$(code "$url/v1/sessions/big?$q")" = 400 ] && jq -e '.error.code == "invalid_query"' "$tmp/body" >/dev/null \
    || fail "?$q: $(head -c 200 "$tmp/body")"
done

# ---- events: a size cap and a budget per minute ----
printf '{"content": "hello"}\n' >"$tmp/one.jsonl"
serve --provider script --script "$tmp/one.jsonl" --events-per-minute 5 --max-event-bytes 1000 --streams-per-token 2 --ping-ms 300
j -X POST -d '{"id": "e"}' "$url/v1/sessions" >/dev/null
blob=$(jq -cn '{blob: ("p" * 2000)}')
[ "$(code -X POST -d "$blob" "$url/v1/sessions/e/events/ping")" = 413 ] \
  && jq -e '.error.code == "payload_too_large"' "$tmp/body" >/dev/null || fail "a 2 KB payload: $(head -c 200 "$tmp/body")"
for i in 1 2 3 4 5; do
  c=$(code -X POST -d '{"n": 1}' "$url/v1/sessions/e/events/ping")
  [ "$c" != 429 ] && [ "$c" != 413 ] || fail "event $i: $c $(head -c 200 "$tmp/body")"
done
[ "$(code -X POST -d '{"n": 1}' "$url/v1/sessions/e/events/ping")" = 429 ] \
  && jq -e '.error.code == "rate_limited"' "$tmp/body" >/dev/null || fail "the 6th event: $(head -c 200 "$tmp/body")"
[ "$(code -X POST "$url/v1/sessions/e/pause")" = 429 ] || fail "pause is an event too: $(head -c 200 "$tmp/body")"
[ "$(code -X POST -d '{"content": "hi"}' "$url/v1/sessions/e/messages")" = 202 ] || fail "messages have their own budget"

# ---- SSE streams per token ----
curl -s -N --max-time 30 "$url/v1/sessions/e/events" >/dev/null & s1=$!
curl -s -N --max-time 30 "$url/v1/sessions/e/events" >/dev/null & s2=$!
third() { [ "$(code --max-time 2 "$url/v1/sessions/e/events")" = 429 ]; }
wait_for third && jq -e '.error.code == "too_many_streams"' "$tmp/body" >/dev/null || fail "a third stream: $(head -c 200 "$tmp/body")"
kill $s1; wait $s1 2>/dev/null
freed() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url/v1/sessions/e/events")" = 200 ]; }
wait_for freed || fail "a closed stream kept its slot"
kill $s2; wait $s2 2>/dev/null

# ---- DELETE mid-stream: the readers get `stopped` ----
jq -cn '{content: ([range(3000)] | map("w\(.) ") | join(""))}' >"$tmp/long.jsonl"
serve --provider script --script "$tmp/long.jsonl" --script-delay-ms 5
j -X POST -d '{"id": "d"}' "$url/v1/sessions" >/dev/null
curl -s -N --max-time 20 "$url/v1/sessions/d/events" >"$tmp/d.sse" & sse=$!
sleep 0.3
j -X POST -d '{"content": "go"}' "$url/v1/sessions/d/messages" >/dev/null
wait_for grep -q '^event: text' "$tmp/d.sse" || fail "nothing streamed"
[ "$(code -X DELETE "$url/v1/sessions/d")" = 200 ] || fail "DELETE: $(cat "$tmp/body")"
wait $sse # the stream ends by itself
tail -n 3 "$tmp/d.sse" | grep -q '^event: stopped' && tail -n 3 "$tmp/d.sse" | grep -q '"reason":"deleted"' \
  || fail "the stream did not end with stopped (deleted): $(tail -c 300 "$tmp/d.sse")"

# ---- framing and the auth scheme ----
tok=tok-bounds-0123456789abcdef
echo "$tok" >"$tmp/tokens"
serve --provider script --script "$tmp/one.jsonl" --tokens "$tmp/tokens"
raw() { # the status line the server answers to a raw request
  timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$0; printf "%b" "$1" >&3; head -n1 <&3' "${url##*:}" "$1" | tr -d '\r'
}
h="POST /v1/sessions HTTP/1.1\r\nHost: ${url#http://}\r\nAuthorization: Bearer $tok\r\nContent-Type: application/json\r\n"
[ "$(raw "${h}Content-Length: 2\r\n\r\n{}")" = "HTTP/1.1 201 Created" ] || fail "a plain POST: $(raw "${h}Content-Length: 2\r\n\r\n{}")"
got=$(raw "${h}Content-Length: 2\r\nContent-Length: 20\r\n\r\n{}")
[ "$got" = "HTTP/1.1 400 Bad Request" ] || fail "two Content-Lengths: $got"
got=$(raw "${h}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
case $got in "HTTP/1.1 400 Bad Request" | "") ;; *) fail "Transfer-Encoding and Content-Length: $got" ;; esac
[ "$(raw "${h}Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")" = "HTTP/1.1 201 Created" ] || fail "a chunked POST"
# refused whole (400, or the connection closed unanswered): only the plain and chunked made one
[ "$(j -H "Authorization: Bearer $tok" "$url/v1/sessions" | jq '.data | length')" = 2 ] || fail "a refused POST made a session"
for scheme in bearer BEARER Bearer; do
  [ "$(code -H "Authorization: $scheme $tok" "$url/v1/sessions")" = 200 ] || fail "scheme $scheme: $(cat "$tmp/body")"
done
[ "$(code -H "Authorization: Bearer x$tok" "$url/v1/sessions")" = 401 ] || fail "a wrong token"
curl -s --max-time 5 -D "$tmp/headers" -o /dev/null "$url/"
grep -qi "^Content-Security-Policy:.*frame-ancestors 'none'" "$tmp/headers" && grep -qi '^X-Frame-Options: DENY' "$tmp/headers" \
  || fail "the page may be framed: $(cat "$tmp/headers")"

kill -TERM "$pid"; wait "$pid" || fail "exit status"
pid=
echo ok
