#!/usr/bin/env bash
# run_case.sh GEN SPEC EXPECTED
#
# Runs `GEN check SPEC` from the current directory and compares its stderr
# with the file EXPECTED line for line. The expected exit status follows
# from EXPECTED: 1 when it holds an error, 0 when it holds only warnings
# and the "ok" summary. Nothing may be written to stdout.
# With UPDATE=1 the expected file is rewritten from the actual output.
set -u
gen=$1 spec=$2 expected=$3
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

"$gen" check "$spec" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?

if [ "${UPDATE:-0}" = 1 ]; then
    cp "$tmp/stderr" "$expected"
    echo "updated $expected"
    exit 0
fi

if [ ! -f "$expected" ]; then
    echo "missing expected file $expected (run with UPDATE=1 to create it)" >&2
    exit 1
fi

if grep -q -e ': error: ' -e ': too many errors ' "$expected"; then
    want=1
else
    want=0
fi

fail=0
if [ "$rc" -ne "$want" ]; then
    echo "exit status $rc, expected $want" >&2
    fail=1
fi
if [ -s "$tmp/stdout" ]; then
    echo "unexpected output on stdout:" >&2
    cat "$tmp/stdout" >&2
    fail=1
fi
if ! diff -u "$expected" "$tmp/stderr" >&2; then
    echo "stderr differs from $expected (- expected, + actual)" >&2
    fail=1
fi
exit $fail
