#!/usr/bin/env bash
# run_valid.sh GEN SPEC
#
# A valid spec checks with exit status 0 and no diagnostic at all: stderr
# holds only the "SPEC: ok (...)" summary with "0 warnings". It must also
# generate C and every diagram format.
set -u
gen=$1 spec=$2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

fail=0
"$gen" check "$spec" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
if [ "$rc" -ne 0 ]; then
    echo "check exited with $rc" >&2
    fail=1
fi
if [ "$(wc -l <"$tmp/stderr")" -ne 1 ] || ! grep -q "^$spec: ok (.*, 0 warnings)\$" "$tmp/stderr"; then
    echo "expected only '$spec: ok (..., 0 warnings)' on stderr, got:" >&2
    cat "$tmp/stderr" >&2
    fail=1
fi
if ! "$gen" gen "$spec" -o "$tmp" 2>"$tmp/gen.err"; then
    echo "gen failed:" >&2
    cat "$tmp/gen.err" >&2
    fail=1
fi
for fmt in dot mermaid markdown; do
    if ! "$gen" diagram "$spec" --format "$fmt" -o "$tmp/diagram.$fmt" 2>"$tmp/diagram.err" ||
        [ ! -s "$tmp/diagram.$fmt" ]; then
        echo "diagram --format $fmt failed:" >&2
        cat "$tmp/diagram.err" >&2
        fail=1
    fi
done
exit $fail
