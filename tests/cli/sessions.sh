#!/usr/bin/env bash
# agentc sessions on a real store, through the real binary and the script provider: the list
# under a header row, prune (by age and status, a session in use kept, --dry-run), --session
# refused without a store, show with tool calls and results, text from outside written
# visibly (no escape sequence reaches the terminal), export to stdout or a file (--force),
# resume --help, run --script-delay-ms, a prompt from stdin, the README's serve script.
agentc="$1"
. "$(dirname "$0")/lib.sh"
need jq
need script
export AGENTC_DB="$tmp/store/sessions.db"
src=$PWD # the source tree (the README)
cd "$tmp" || fail "cd"
printf '{"content": "Hello there."}\n' >hello.jsonl
printf '%s\n' '{"tool_calls": [{"id": "c1", "name": "calculator", "arguments": "{\"expression\": \"17 * 23\"}"}]}' \
  '{"content": "It is 391."}' >calc.jsonl
printf '{"content": "%s"}\n' "$(seq -s ' ' 1 200)" >slow.jsonl
esc=$'\e'
run() { "$agentc" run --provider script --script "$@"; }

# ---- --session needs a store: refused with the reason, nothing stored ------------------------
run hello.jsonl --no-store --session s0 hi >out 2>err; [ $? -eq 2 ] || fail "--no-store --session: exit $?"
grep -q "session ID needs the store, which --no-store turns off" err || fail "no reason: $(cat err)"
AGENTC_DB=off run hello.jsonl --session s0 hi >out 2>err; [ $? -eq 2 ] || fail "AGENTC_DB=off --session"
grep -q "AGENTC_DB=off" err || fail "AGENTC_DB=off reason: $(cat err)"
"$agentc" resume s0 --no-store >out 2>err; [ $? -eq 2 ] || fail "resume --no-store"
[ ! -e "$AGENTC_DB" ] || fail "a refused run made the store"
# reading a store never makes one
"$agentc" sessions list >out 2>err || fail "list without a store: exit $?"
grep -q "no sessions stored: no store at $AGENTC_DB" err || fail "list without a store: $(cat err)"
"$agentc" sessions show s0 >out 2>err; [ $? -eq 1 ] || fail "show without a store: exit"
"$agentc" sessions prune --older-than 1s >out 2>err || fail "prune without a store"
[ ! -e "$AGENTC_DB" ] || fail "reading the store made it"
AGENTC_DB=off "$agentc" sessions list >out 2>err; [ $? -eq 3 ] || fail "list with AGENTC_DB=off: exit"
grep -q "AGENTC_DB=off: there is no store to read" err || fail "AGENTC_DB=off: $(cat err)"
[ ! -e off ] || fail "AGENTC_DB=off made a store named off"
run hello.jsonl --no-store hi >out || fail "--no-store without --session"

# ---- sessions to list: an escape sequence in a title, tool calls, an old stopped one ------------
run calc.jsonl --tools builtin:calculator --session calc "What is 17 * 23?" >out 2>err \
  || fail "calc run: $(cat err)"
run hello.jsonl --session evil $'hi \e]0;PWNED\a\e[2J\e[31mFAKE \xc2\x9b6n end\nline 2' >out 2>err \
  || fail "evil run: $(cat err)"
# running ID: waits (bounded) until the stored session ID runs in a live process
running() {
  for _ in $(seq 1 600); do
    "$agentc" sessions list --json 2>/dev/null | jq -e -s --arg id "$1" \
      'any(.[]; .id == $id and .status == "running" and .holder != "")' >/dev/null && return 0
    sleep 0.05
  done
  fail "session $1 never ran: $("$agentc" sessions list 2>&1; cat bg.err 2>/dev/null)"
}
"$agentc" run --provider script --script slow.jsonl --script-delay-ms 200 --session crashed go >/dev/null 2>bg.err &
bg=$!
running crashed
kill -9 "$bg"; wait "$bg" 2>/dev/null
"$agentc" sessions list >list 2>err || fail "list"
head -n1 list | grep -Eq '^ID +STATUS +TURN +EVENTS +UPDATED +IN USE +TITLE$' || fail "header: $(head -n1 list)"
grep -Eq '^calc +[a-z]+ +at rest +[0-9]+ +20[0-9-]+T[0-9:]+Z +no +What is 17 \* 23\?$' list \
  || fail "calc row: $(cat list)"
grep -Eq '^crashed +running +stopped +' list || fail "crashed row: $(cat list)"
grep -q "agentc resume ID" err || fail "no word on stopped sessions: $(cat err)"
! grep -q "$esc" list || fail "list wrote an escape character: $(cat -v list)"
grep -qF 'hi \x1b]0;PWNED\x07\x1b[2J\x1b[31mFAKE \u009b6n end line 2' list || fail "title: $(cat -v list)"
"$agentc" sessions list --json >json || fail "list --json"
[ "$(jq -s length json)" -eq 3 ] || fail "list --json: $(cat json)"
jq -s -e 'map(select(.id == "evil"))[0].title | startswith("hi \u001b]0;")' json >/dev/null \
  || fail "--json title is not exact on a pipe"
script -qec "$agentc sessions list --json" /dev/null >tty || fail "list --json on a tty"
! grep -q "$esc" tty && ! grep -q $'\xc2\x9b' tty || fail "list --json on a tty: $(cat -v tty)"
grep -qF '\u001B]0;PWNED' tty || fail "list --json on a tty: $(cat -v tty)"

# ---- show: tool calls and results; text made visible --------------------------------------------
"$agentc" sessions show calc >show || fail "show"
grep -qx -- '-> calculator {"expression": "17 \* 23"}' show || fail "show lacks the call: $(cat show)"
grep -qx -- '<- calculator ok: 391' show || fail "show lacks the result: $(cat show)"
grep -qx "It is 391." show || fail "show lacks the answer"
"$agentc" sessions show evil >show || fail "show evil"
! grep -q "$esc" show && ! grep -q $'\xc2\x9b' show || fail "show wrote escapes: $(cat -v show)"
grep -qF 'hi \x1b]0;PWNED\x07\x1b[2J\x1b[31mFAKE \u009b6n end' show || fail "show text: $(cat -v show)"
grep -qx "line 2" show || fail "show lost a newline: $(cat show)"

# ---- export: stdout by default and with -o -; a file only with --force when it exists --------
"$agentc" sessions export calc >exp 2>err || fail "export to stdout: $(cat err)"
head -n1 exp | jq -e '.agentc_journal and .session == "calc"' >/dev/null || fail "export: $(head -c 300 exp)"
[ ! -s err ] || fail "export to stdout said: $(cat err)"
"$agentc" replay exp --check >/dev/null || fail "the exported journal does not replay"
"$agentc" sessions export calc -o - >exp2 || fail "export -o -"
cmp -s exp exp2 || fail "export -o - differs from stdout"
[ ! -e ./- ] || fail "export -o - made a file named -"
echo keep >j.jsonl
"$agentc" sessions export calc -o j.jsonl 2>err; [ $? -eq 1 ] || fail "export over a file: exit not 1"
grep -q "exists: --force replaces it" err || fail "export over a file: $(cat err)"
[ "$(cat j.jsonl)" = keep ] || fail "export touched an existing file"
"$agentc" sessions export calc -o j.jsonl --force 2>err || fail "export --force: $(cat err)"
cmp -s exp j.jsonl || fail "export --force wrote something else"
[ "$(stat -c %a j.jsonl)" = 600 ] || fail "export --force mode $(stat -c %a j.jsonl)"
ls -a | grep -q agentc-export && fail "export left its folder: $(ls -a)"
"$agentc" sessions export nosuch >out 2>err; [ $? -eq 1 ] || fail "export of no session: exit"
"$agentc" sessions export evil -o - >exp3 || fail "export evil"
grep -q $'\xc2\x9b' exp3 || fail "export to a pipe is not exact"
script -qec "$agentc sessions export evil" /dev/null >tty || fail "export on a tty"
! grep -q $'\xc2\x9b' tty || fail "export on a tty wrote a C1 control: $(cat -v tty)"

# ---- prune: by age and status; a session in use kept; --dry-run ---------------------------------
sleep 2.1 # calc, evil and crashed are now older than 2s
"$agentc" sessions prune --older-than 1x >out 2>err; [ $? -eq 2 ] || fail "a bad duration: exit"
grep -q "not a duration" err || fail "bad duration message: $(cat err)"
"$agentc" sessions prune --older-than 2s --status nosuch >out 2>err; [ $? -eq 2 ] || fail "bad status"
grep -q "unknown status 'nosuch' (idle, running" err || fail "bad status message: $(cat err)"
"$agentc" sessions prune --older-than 2s --force >out 2>err; [ $? -eq 2 ] || fail "--force on prune"
"$agentc" sessions prune 2>err; [ $? -eq 2 ] || fail "prune without --older-than"
"$agentc" sessions prune --older-than 2s --status running --dry-run >out 2>err || fail "dry run: $(cat err)"
[ "$(cat out)" = "$(printf 'would remove crashed (running, updated %s)' \
  "$(jq -r 'select(.id == "crashed") | .updated' json)")" ] || fail "dry run said: $(cat out)"
[ "$("$agentc" sessions list --json | jq -s length)" -eq 3 ] || fail "--dry-run removed something"
"$agentc" sessions prune --older-than 2s --status failed,running >out 2>err || fail "prune: $(cat err)"
grep -qx "removed crashed (running, updated .*)" out && [ "$(wc -l <out)" -eq 1 ] \
  || fail "prune --status failed,running: $(cat out)"
grep -qx "removed 1 session" err || fail "prune summary: $(cat err)"
run hello.jsonl --session fresh hi >out || fail "fresh run"
"$agentc" sessions prune --older-than 2s >out 2>err || fail "prune by age: $(cat err)"
sort out | sed 's/ (.*//' | tr '\n' ' ' | grep -qx "removed calc removed evil " \
  || fail "prune by age: $(cat out)"
grep -qx "removed 2 sessions" err || fail "prune summary: $(cat err)"
"$agentc" run --provider script --script slow.jsonl --script-delay-ms 200 --session held go >/dev/null 2>bg.err &
bg=$!
running held
"$agentc" sessions prune --older-than 0s --dry-run >out 2>err; [ $? -eq 1 ] || fail "dry run, held: exit"
grep -q "kept held: in use by agentc " err || fail "dry run, held: $(cat err)"
grep -q "would remove fresh" out || fail "dry run, fresh: $(cat out)"
"$agentc" sessions prune --older-than 0s --status running >out 2>err; [ $? -eq 1 ] || fail "held: exit"
grep -q "kept held: session 'held' is in use by agentc" err || fail "held: $(cat err)"
grep -q "kept 1 in use" err || fail "held summary: $(cat err)"
[ ! -s out ] || fail "held: removed $(cat out)"
"$agentc" sessions list --json | jq -s -e 'map(.id) | sort == ["fresh", "held"]' >/dev/null \
  || fail "after prune: $("$agentc" sessions list)"
kill "$bg" 2>/dev/null; wait "$bg" 2>/dev/null

# ---- a prompt read from stdin: its line ends are not the prompt's --------------------------------
printf 'piped in\n\n' | run hello.jsonl --session piped - >out || fail "prompt from stdin"
"$agentc" sessions show piped --json | jq -e '.session.conversation.messages[0].content == "piped in"' \
  >/dev/null || fail "stdin prompt: $("$agentc" sessions show piped --json | jq -c .session.conversation.messages[0])"

# ---- a turn a crash stopped, finished before the new message: each answer on its own line -----
{ cat slow.jsonl; echo '{"content": "the new answer"}'; } >two.jsonl
"$agentc" run --db k.db --provider script --script two.jsonl --script-delay-ms 200 --session k go \
  >/dev/null 2>bg.err &
bg=$!
AGENTC_DB=k.db running k
kill -9 "$bg"; wait "$bg" 2>/dev/null
run two.jsonl --db k.db --session k "and now" >out 2>err || fail "run after a crash: $(cat err)"
[ "$(cat out)" = "$(printf '%s\nthe new answer' "$(seq -s ' ' 1 200)")" ] \
  || fail "the resumed turn's answer and the new one: $(cat out)"
grep -q "the interrupted turn is finished; now the new message" err || fail "no word: $(cat err)"

# ---- a failed turn's done line carries no answer, not the turn before's ----------------------------
run hello.jsonl --session twice hi >out 2>err || fail "turn 1: $(cat err)"
run hello.jsonl --session twice --jsonl again >out 2>err; [ $? -eq 1 ] || fail "turn 2 should fail"
has_line out '.type == "done" and .status != "completed" and .answer == "" and (.error | test("no more turns"))' \
  || fail "a failed turn's done line: $(cat out)"

# ---- the README's serve example: its script holds a conversation of three messages -----------
sed -n "/^cat >turns.jsonl <<'EOF'\$/,/^EOF\$/p" "$src/README.md" | sed '1d;$d' >turns.jsonl
[ "$(wc -l <turns.jsonl)" -ge 3 ] || fail "README's turns.jsonl: $(cat turns.jsonl)"
for m in hello "what is it?" thanks; do
  run turns.jsonl --tools builtin:calculator --session readme "$m" >out 2>err \
    || fail "README script, message '$m': $(cat err)"
done
grep -q "391" <("$agentc" sessions show readme) || fail "README script: no tool call"

# ---- help texts, --script-delay-ms bounds ---------------------------------------------------------
"$agentc" resume --help | head -n1 | grep -q "^usage: agentc resume ID" || fail "resume --help"
"$agentc" resume 2>err; [ $? -eq 2 ] && grep -q "missing ID" err || fail "resume without ID: $(cat err)"
run hello.jsonl --no-store --script-delay-ms x hi 2>err; [ $? -eq 2 ] || fail "--script-delay-ms x"
"$agentc" sessions --help | grep -q "prune --older-than DURATION" || fail "sessions --help"
exit 0
