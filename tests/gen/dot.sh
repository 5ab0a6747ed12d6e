#!/usr/bin/env bash
# dot.sh GEN SPEC
#
# The DOT diagram of SPEC renders with Graphviz (dot -Tsvg) without a
# single line on stderr. Exit 77 (skipped) when dot is not installed.
set -u
gen=$1 spec=$2
command -v dot >/dev/null 2>&1 || { echo "dot not installed: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
"$gen" diagram "$spec" --format dot -o "$tmp/g.dot" || exit 1
dot -Tsvg "$tmp/g.dot" -o "$tmp/g.svg" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ] || [ -s "$tmp/err" ]; then
    echo "dot -Tsvg exited $rc with:" >&2
    cat "$tmp/err" >&2
    exit 1
fi
grep -q '<svg' "$tmp/g.svg" || { echo "no SVG written" >&2; exit 1; }
