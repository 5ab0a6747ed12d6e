#!/usr/bin/env bash
# journal_honest.sh AGENTC
#
# Through the CLI: a journal that cannot be written fails the run with the
# reason (a file size limit mid-turn, /dev/full); journals are 0600 and a
# symbolic link is refused; replay --check refuses empty, step-less, torn and
# garbage journals instead of reporting that every transition matches.
set -uo pipefail
agentc="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

printf '{"content":"%s"}\n' "$(head -c 50000 /dev/zero | tr '\0' Z)" >"$tmp/big.jsonl"
printf '{"content":"ok"}\n' >"$tmp/ok.jsonl"

# a size-capped journal: exit 1 and the reason, never exit 0 (the prompt's length puts the cap
# inside a line: a cap that falls between two lines leaves a journal that looks whole)
err=$( (trap '' XFSZ; ulimit -f 8; exec "$agentc" run --provider script --script "$tmp/big.jsonl" \
        --journal "$tmp/capped.journal" "hi there") 2>&1 >/dev/null)
rc=$?
[ $rc -eq 1 ] || fail "capped journal: exit $rc (want 1): $err"
grep -q "cannot write journal" <<<"$err" || fail "capped journal: no reason given: $err"
out=$("$agentc" replay "$tmp/capped.journal" --check 2>&1) && fail "check passed on a capped journal: $out"
grep -q "every transition matches" <<<"$out" && fail "capped journal 'matches': $out"

# /dev/full: the session is refused
err=$("$agentc" run --provider script --script "$tmp/ok.jsonl" --journal /dev/full hi 2>&1 >/dev/null)
rc=$?
[ $rc -eq 3 ] || fail "/dev/full: exit $rc (want 3): $err"
grep -q "cannot write journal '/dev/full'" <<<"$err" || fail "/dev/full: $err"

# mode 0600 whatever the umask; a symbolic link is refused, its target untouched
(umask 022; "$agentc" run --provider script --script "$tmp/ok.jsonl" --journal "$tmp/j" hi >/dev/null) \
  || fail "journaled run"
[ "$(stat -c %a "$tmp/j")" = 600 ] || fail "journal mode $(stat -c %a "$tmp/j")"
echo precious >"$tmp/target"
ln -s "$tmp/target" "$tmp/link"
err=$("$agentc" run --provider script --script "$tmp/ok.jsonl" --journal "$tmp/link" hi 2>&1 >/dev/null)
[ $? -eq 3 ] || fail "a symlinked journal must be refused"
grep -q "symbolic link" <<<"$err" || fail "symlink message: $err"
[ "$(cat "$tmp/target")" = precious ] || fail "the symlink's target was overwritten"

"$agentc" replay "$tmp/j" --check >/dev/null || fail "a good journal must check"
check_refuses() { # FILE WHAT
  out=$("$agentc" replay "$1" --check 2>&1)
  rc=$?
  [ $rc -ne 0 ] || fail "$2: check passed: $out"
  grep -q "every transition matches" <<<"$out" && fail "$2: reported as matching: $out"
  grep -q "$3" <<<"$out" || fail "$2: message: $out"
}
: >"$tmp/empty"
check_refuses "$tmp/empty" "empty journal" "no header line"
head -n1 "$tmp/j" >"$tmp/header"
check_refuses "$tmp/header" "header only" "records no event"
grep -v '"steps"' "$tmp/j" >"$tmp/nosteps"
check_refuses "$tmp/nosteps" "no steps lines" "has no steps line"
{ cat "$tmp/j"; printf '{"n":99,"t":1,"ev":"user_mes'; } >"$tmp/torn"
check_refuses "$tmp/torn" "torn tail" "torn line"
out=$("$agentc" replay "$tmp/torn" 2>&1) || fail "replay without --check of a torn journal: $out"
grep -q "torn line" <<<"$out" || fail "torn note missing: $out"
{ head -n1 "$tmp/j"; head -c 1000000 /dev/urandom | tr -d '\n'; } >"$tmp/garbage"
check_refuses "$tmp/garbage" "garbage" "torn line"
echo ok
