#!/usr/bin/env bash
# The README's "Without CMake" lines work as written: the tree installed into a scratch
# prefix (cmake --install), the README's C example built with its shared and its static
# pkg-config command lines (only /opt/agentc replaced by that prefix; FLAGS, the build's
# sanitizer flags if any, added after cc).
build="$1" flags="${2:-}"
. "$(dirname "$0")/lib.sh"
need pkg-config
readme=README.md
cmake --install "$build" --prefix "$tmp/p" >"$tmp/install.log" 2>&1 || fail "install: $(tail "$tmp/install.log")"
# the example: its #include, then its statements as the body of main
sed -n '/^## Embedding/,/^## /p' "$readme" | sed -n '/^```c$/,/^```$/p' | sed '1d;$d' >"$tmp/snippet"
grep -q '^#include "agentc/agentc.h"' "$tmp/snippet" || fail "no C example in the README"
{
  echo '#include <stdio.h>'
  echo '#include <stdlib.h>'
  grep '^#include' "$tmp/snippet"
  echo 'int main(void) {'
  grep -v '^#include' "$tmp/snippet"
  echo 'return 0; }'
} >"$tmp/app.c"
sed -n '/Without CMake:$/,/^To change behaviour/p' "$readme" | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d' \
  | sed 's/ *# [a-z]*$//' | sed -e :a -e '/\\$/N; s/\\\n//; ta' | sed "s|/opt/agentc|$tmp/p|g" >"$tmp/cmds"
[ "$(grep -c '^cc ' "$tmp/cmds")" -eq 2 ] || fail "the README's link lines: $(cat "$tmp/cmds")"
cd "$tmp" || fail "cd"
n=0
while IFS= read -r line; do
  case "$line" in
  export*) eval "$line" ;;
  cc*)
    n=$((n + 1))
    line=${line/app.c/app.c -o app$n}
    eval "cc $flags ${line#cc }" 2>"$tmp/cc.err" || fail "README line fails: $line: $(cat "$tmp/cc.err")"
    ;;
  esac
done <"$tmp/cmds"
[ -x app1 ] && [ -x app2 ] || fail "not built"
! ldd app2 | grep -q libagentc || fail "the static line linked libagentc.so"
echo ok
