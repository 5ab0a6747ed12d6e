#!/usr/bin/env bash
# Sourced by the tests that read a session's Server-Sent Events stream of `agentc serve` (they
# define wait_for CMD..., a bounded poll).
# read_stream FILE URL N [CURL ARGS...]: the stream at URL read into FILE until it holds N
# turn_done frames read whole (data parsed, the frame's blank line after it), for as long as
# wait_for polls: a reader for a fixed time could stop before a loaded server had sent them.
read_stream() {
  local file=$1 url=$2 n=$3 c rc
  shift 3
  curl -s -N --max-time 60 "$@" "$url" >"$file" &
  c=$!
  wait_for turns_read "$file" "$n"
  rc=$?
  kill "$c" 2>/dev/null
  wait "$c" 2>/dev/null
  return $rc
}
# turns_read FILE N: FILE holds N turn_done frames read whole
turns_read() {
  [ "$(sed -n '/^event: turn_done$/{n;s/^data: //p}' "$1" | jq -c .answer 2>/dev/null | wc -l)" -ge "$2" ] &&
    [ "$(tail -c 2 "$1" | od -An -tx1 | tr -d ' ')" = 0a0a ]
}
