#!/usr/bin/env bash
# golden.sh GEN SPEC NAME GOLDEN_DIR
#
# Generates NAME_fsm.h, NAME_fsm.c, NAME.dot, NAME.mmd and NAME.md from SPEC
# (run from the repository root, SPEC relative to it) and compares them
# byte for byte with the files of the same name in GOLDEN_DIR.
# With UPDATE=1 the golden files are rewritten instead.
set -u
gen=$1 spec=$2 name=$3 golden=$4
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

fail=0
"$gen" gen "$spec" -o "$tmp" --spec-path "$spec" || fail=1
"$gen" diagram "$spec" --format dot --spec-path "$spec" -o "$tmp/$name.dot" || fail=1
"$gen" diagram "$spec" --format mermaid --spec-path "$spec" -o "$tmp/$name.mmd" || fail=1
"$gen" diagram "$spec" --format markdown --spec-path "$spec" -o "$tmp/$name.md" || fail=1
if [ $fail -ne 0 ]; then
    echo "generating from $spec failed" >&2
    exit 1
fi

for f in "${name}_fsm.h" "${name}_fsm.c" "$name.dot" "$name.mmd" "$name.md"; do
    if [ "${UPDATE:-0}" = 1 ]; then
        cp "$tmp/$f" "$golden/$f"
        echo "updated $golden/$f"
    elif ! cmp -s "$golden/$f" "$tmp/$f"; then
        echo "$golden/$f differs from the output of $gen (- golden, + actual):" >&2
        diff -u "$golden/$f" "$tmp/$f" >&2 || true
        fail=1
    fi
done
exit $fail
