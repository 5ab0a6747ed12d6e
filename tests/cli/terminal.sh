#!/usr/bin/env bash
# On a terminal, escape sequences and other control characters from the model
# (answer, reasoning, tool names) and from tools (results) are written visibly
# (\x1b), never raw; --jsonl and a pipe get the exact text. The terminal is a
# pseudo-terminal made by `script` (util-linux).
agentc="$1"
. "$(dirname "$0")/lib.sh"
need jq
need script
need od
cat >"$tmp/tools.json" <<'JSON'
{"tools": [{"name": "escout", "description": "Prints escapes", "parameters": {"type": "object"},
            "command": ["printf", "\u001b]0;TOOLPWN\u0007\u001b[2Jdone"]}]}
JSON
cat >"$tmp/s.jsonl" <<'JSON'
{"reasoning": "think \u001b]52;c;Y2xpcA==\u0007", "content": "", "tool_calls": [{"id": "c1", "name": "\u001b[2Jevil", "arguments": "{\"x\": \"\u001b[31m\"}"}, {"id": "c2", "name": "escout", "arguments": "{}"}]}
{"content": "\u001b]0;pwned\u0007\u001b[2Jred \u001b[31mRED\u001b[0m c1:\u009b31m bs:\u0008 del:\u007f tab:\tend\nline2 caf\u00e9 ok"}
JSON
# run_pty OUT ARGS...: agentc run ARGS on a pseudo-terminal (stdout and stderr), output in OUT
run_pty() {
  local out="$1"; shift
  printf '%q ' "$agentc" run --provider script --script "$tmp/s.jsonl" --tools "$tmp/tools.json" "$@" \
    >"$tmp/cmd.sh"
  NO_COLOR=1 SHELL=/bin/sh script -qec "sh $tmp/cmd.sh" /dev/null </dev/null >"$out" 2>&1
}
run_pty "$tmp/tty" hi; rc=$?
[ $rc -eq 0 ] || fail "run on a pty: exit $rc: $(cat "$tmp/tty")"
[ -s "$tmp/tty" ] || fail "no output on the pty"
# no ESC, BEL, NUL, DEL or C1 CSI byte reached the terminal
od -An -tx1 -v "$tmp/tty" | tr -s ' \n' '\n\n' | grep -qxE "1b|07|08|7f|9b" \
  && fail "a raw control byte reached the terminal: $(od -c "$tmp/tty" | head -20)"
tr -d '\r' <"$tmp/tty" >"$tmp/tty.txt"
for want in '\x1b]0;pwned\x07\x1b[2Jred \x1b[31mRED\x1b[0m c1:\u009b31m bs:\x08 del:\x7f tab:' \
            'line2 café ok' '-> \x1b[2Jevil {"x": "\x1b[31m"}' '<- \x1b[2Jevil failed' \
            '-> escout {}' '<- escout ok' '\x1b]0;TOOLPWN\x07\x1b[2Jdone' \
            'think \x1b]52;c;Y2xpcA==\x07'; do
  grep -qF -- "$want" "$tmp/tty.txt" || fail "missing on the terminal: $want in $(cat "$tmp/tty.txt")"
done
grep -qP 'tab:\tend$' "$tmp/tty.txt" || fail "a tab in the answer was not kept"

# --jsonl on a terminal: JSON escapes only, and the text decodes to the exact answer
run_pty "$tmp/jl" --jsonl hi || fail "--jsonl on a pty failed"
od -An -tx1 -v "$tmp/jl" | tr -s ' \n' '\n\n' | grep -qxE '1b|07' && fail "raw control bytes in --jsonl"
tr -d '\r' <"$tmp/jl" | jq -e -s --slurpfile s "$tmp/s.jsonl" \
  '(map(select(.type == "text") | .delta) | join("")) == $s[1].content' >/dev/null \
  || fail "--jsonl text is not the exact answer"

# a pipe gets the answer byte for byte
"$agentc" run --provider script --script "$tmp/s.jsonl" --tools "$tmp/tools.json" hi >"$tmp/pipe" 2>/dev/null
grep -qF $'\e]0;pwned\a\e[2Jred' "$tmp/pipe" || fail "the answer written to a pipe is not exact"
echo "ok"
