#!/usr/bin/env bash
# atomic.sh GEN
#
# `gen` writes its two files as a pair: when the second cannot be written, the
# old .h and .c are left as they were (never a new header beside old tables)
# and no temporary file is left behind. Run from the repository root.
set -u
gen=$1
case $gen in /*) ;; *) gen=$PWD/$gen ;; esac
tmp=$(mktemp -d) || exit 2
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "atomic: $*" >&2; exit 1; }

mkdir -p "$tmp/v1" "$tmp/v2" "$tmp/out"
cp spec/agent.fsm "$tmp/v1/agent.fsm"
# v2: another param value and an extra event: another hash, other enumerators
sed -e 's/^param max_iterations .*/param max_iterations = 3/' \
    -e 's/^event spawn, /event spawn, extra_event, /' spec/agent.fsm >"$tmp/v2/agent.fsm"
cmp -s "$tmp/v1/agent.fsm" "$tmp/v2/agent.fsm" && fail "the v2 edit did not apply"

"$gen" gen "$tmp/v1/agent.fsm" -o "$tmp/out" >/dev/null 2>&1 || fail "v1 gen"
cp "$tmp/out/agent_fsm.h" "$tmp/old.h"
cp "$tmp/out/agent_fsm.c" "$tmp/old.c"

# 1. the .c cannot be written (a file size limit between the two sizes; SIGXFSZ
#    ignored so the write fails with EFBIG)
hsize=$(wc -c <"$tmp/old.h")
csize=$(wc -c <"$tmp/old.c")
limit=$(((hsize + 2047) / 1024 + 1))
[ $((limit * 1024)) -lt "$csize" ] || fail "test setup: header $hsize, tables $csize bytes"
(trap '' XFSZ; ulimit -f "$limit"; exec "$gen" gen "$tmp/v2/agent.fsm" -o "$tmp/out") \
  >/dev/null 2>"$tmp/err1"
[ $? -ne 0 ] || fail "a failed write must exit non-zero"
grep -q "error writing" "$tmp/err1" || fail "no error message: $(cat "$tmp/err1")"
cmp -s "$tmp/out/agent_fsm.h" "$tmp/old.h" || fail "the header changed although the tables failed"
cmp -s "$tmp/out/agent_fsm.c" "$tmp/old.c" || fail "the tables changed"
[ "$(ls -A "$tmp/out" | wc -l)" -eq 2 ] || fail "temporary files left: $(ls -A "$tmp/out")"

# 2. the .c target cannot be replaced (a directory there): the header stays old
mkdir -p "$tmp/out2"
cp "$tmp/old.h" "$tmp/out2/agent_fsm.h"
mkdir "$tmp/out2/agent_fsm.c"
"$gen" gen "$tmp/v2/agent.fsm" -o "$tmp/out2" >/dev/null 2>"$tmp/err2" && fail "a directory as .c must fail"
cmp -s "$tmp/out2/agent_fsm.h" "$tmp/old.h" || fail "the header changed although the .c failed"
[ "$(ls -A "$tmp/out2" | wc -l)" -eq 2 ] || fail "temporary files left: $(ls -A "$tmp/out2")"

# 3. a read-only folder: nothing changes, nothing is left
if [ "$(id -u)" -ne 0 ]; then
  chmod a-w "$tmp/out"
  "$gen" gen "$tmp/v2/agent.fsm" -o "$tmp/out" >/dev/null 2>&1 && fail "read-only folder must fail"
  chmod u+w "$tmp/out"
  cmp -s "$tmp/out/agent_fsm.h" "$tmp/old.h" || fail "read-only: header changed"
fi

# 4. a run that succeeds replaces both and leaves nothing else
"$gen" gen "$tmp/v2/agent.fsm" -o "$tmp/out" >/dev/null 2>&1 || fail "v2 gen"
cmp -s "$tmp/out/agent_fsm.h" "$tmp/old.h" && fail "v2 header not written"
cmp -s "$tmp/out/agent_fsm.c" "$tmp/old.c" && fail "v2 tables not written"
grep -q "extra_event" "$tmp/out/agent_fsm.c" || fail "v2 tables lack the new event"
[ "$(ls -A "$tmp/out" | wc -l)" -eq 2 ] || fail "temporary files left: $(ls -A "$tmp/out")"
echo ok
