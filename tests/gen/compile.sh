#!/usr/bin/env bash
# compile.sh GEN CC SPEC
#
# The C generated from SPEC must compile warning-free as C11:
#   CC -std=c11 -Wall -Wextra -Werror -pedantic ... -c NAME_fsm.c
# and a translation unit that includes the header and reads the tables
# must compile and link against it.
set -u
gen=$1 cc=$2 spec=$3
name=$(basename "$spec" .fsm)
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
flags="-std=c11 -Wall -Wextra -Werror -pedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes"

"$gen" gen "$spec" -o "$tmp" || exit 1
id=$(printf '%s' "$name" | tr -c 'A-Za-z0-9_' '_')
cat >"$tmp/main.c" <<EOC
#include "${name}_fsm.h"
#include <stdio.h>
int main(void)
{
    const ac_fsm_tables *t = &${id}_fsm;
    printf("%s %u %u %u\\n", t->hash, t->n_machines, t->n_states, t->n_transitions);
    return t->n_machines > 0 && t->n_states > 0 ? 0 : 1;
}
EOC
# shellcheck disable=SC2086
$cc $flags -Iinclude -I"$tmp" -c "$tmp/${name}_fsm.c" -o "$tmp/fsm.o" || exit 1
# shellcheck disable=SC2086
$cc $flags -Iinclude -I"$tmp" "$tmp/main.c" "$tmp/fsm.o" -o "$tmp/main" || exit 1
"$tmp/main" || exit 1
