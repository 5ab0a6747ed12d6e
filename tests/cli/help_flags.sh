#!/usr/bin/env bash
# The options of every command, three ways: the ones it accepts, the ones its --help names, the
# ones the docs (README.md, docs/*.md) name. Each option a command accepts is in its --help and in
# the docs (in its own doc: serve's docs/serve.md, coverage's and testgen's docs/audit.md, store
# copy's docs/postgresql.md, run's, batch's and sessions' the README); each option its --help names is accepted; each option the docs name is accepted by some
# command (tools other than agentc, and transition labels, aside).
# The candidates are the option literals of the parsers ("--name", "-x" in src/cli, gen/gen_cli.c);
# a command accepts one when, given it before an unknown option, it does not call it unknown.
agentc="$1"
. "$(dirname "$0")/lib.sh"
cd "$tmp" || fail "cd"
src=$OLDPWD
grep -ohE '"--?[a-z][a-z0-9-]*"' "$src"/src/cli/*.c "$src"/gen/gen_cli.c | tr -d '"' | sort -u \
  | grep -vxE -- '--help|-h|--version|--zz' >cands
[ "$(wc -l <cands)" -gt 40 ] || fail "too few option literals found: $(cat cands)"

# accepts CMD... FLAG: the command does not call FLAG unknown.
accepts() {
  local flag="${*: -1}" out
  out=$(timeout 10 env AGENTC_DB=off "$agentc" "$@" 1 --zz 2>&1 </dev/null)
  ! grep -qE "(unknown option|unexpected|unexpected argument|unknown option or missing value) '$flag'" <<<"$out"
}
export -f accepts
export agentc
# The commands; check and diagram also as their --tools forms.
cmds=(run batch resume serve demo replay coverage testgen "store copy" sessions check gen diagram)
failures=0
bad() { echo "MISMATCH: $*" >&2; failures=$((failures + 1)); }
# agentc --help names every command, and every sessions command (those sessions --help names)
"$agentc" --help >mainhelp || fail "agentc --help exits $?"
for c in "${cmds[@]}"; do grep -qE "^  $c( |$)" mainhelp || bad "agentc --help does not name $c"; done
"$agentc" sessions --help | grep -oE '^  [a-z]+ ' | tr -d ' ' | sort >subs
grep -oE '^  sessions [a-z|]+' mainhelp | sed 's/.* //' | tr '|' '\n' | sort >subs_main
cmp -s subs subs_main || bad "sessions commands: agentc --help names $(tr '\n' ' ' <subs_main), sessions --help $(tr '\n' ' ' <subs)"
: >all_accepted
for c in "${cmds[@]}"; do
  read -ra words <<<"$c"
  "$agentc" "${words[@]}" --help >help 2>&1 || fail "agentc $c --help exits $?"
  # resume's options are run's (its help says so)
  [ "$c" = resume ] && "$agentc" run --help >>help
  grep -oE -- '(^|[^A-Za-z0-9-])--?[a-z][a-z0-9-]*' help | sed 's/^[^-]*//' | sort -u >helpflags
  # four probes at a time: one line each, written whole
  xargs -P 4 -I{} bash -c 'f=$1; shift
    accepts "$@" "$f" || { [[ $1 =~ ^(check|diagram)$ ]] && accepts "$1" --tools x "$f"; } && echo "$f"' \
    _ {} "${words[@]}" <cands | sort >acc
  [ -s acc ] || [ "$c" = demo ] || fail "agentc $c accepts no option at all (the probe is broken?)"
  cat acc >>all_accepted
  # the doc of the command, where it has one of its own
  case "$c" in
  serve) doc=docs/serve.md ;; coverage | testgen) doc=docs/audit.md ;;
  "store copy") doc=docs/postgresql.md ;; *) doc=README.md ;;
  esac
  while IFS= read -r f; do
    grep -qxF -- "$f" helpflags || bad "agentc $c accepts $f, which its --help does not name"
    grep -qE -- "(^|[^a-z0-9-])$f([^a-z0-9-]|$)" "$src"/README.md "$src"/docs/*.md \
      || bad "agentc $c accepts $f, which no doc names"
    [[ $c =~ ^(check|gen|diagram|demo|replay)$ ]] || [[ $f =~ ^-[a-z]$ ]] \
      || grep -qE -- "(^|[^a-z0-9-])$f([^a-z0-9-]|$)" "$src/$doc" || bad "agentc $c accepts $f, which $doc does not name"
  done <acc
  while IFS= read -r f; do
    grep -qxF -- "$f" acc && continue
    # named only to point at another command, or the help of every command
    [[ $f =~ ^(--help|-h|--version)$ ]] && continue
    grep -qE -- "agentc [a-z ]*$f" help && continue
    accepts "${words[@]}" "$f" || bad "agentc $c --help names $f, which it does not accept"
  done <helpflags
done

# Options the docs name: each accepted by some command. Not agentc's: the build tools', the
# embedding example's, the benchmarks' (options on a line naming bench_ or bench/), and the
# arrows of transition labels (`A --event--> B`).
sort -u all_accepted >accepted
grep -h 'bench[_/]' "$src"/README.md "$src"/docs/*.md | grep -oE -- '--[a-z][a-z0-9-]*[a-z0-9]' | sort -u >benchflags
grep -hv 'bench[_/]' "$src"/README.md "$src"/docs/*.md | sed -E 's/--[A-Za-z0-9_.]+( \[[^]]*\])?-->//g' \
  | grep -ohE -- '(^|[^A-Za-z0-9-])--[a-z][a-z0-9-]*[a-z0-9]([^a-z0-9>-]|$)' \
  | sed -E 's/^[^-]*//; s/[^a-z0-9]$//' | sort -u >docflags
others='--build|--target|--test-dir|--output-on-failure|--install|--prefix|--cflags|--libs|--static|--approve|--deny'
while IFS= read -r f; do
  [[ $f =~ ^($others)$ ]] && continue
  grep -qxF -- "$f" benchflags && continue
  grep -qxF -- "$f" accepted || bad "the docs name $f, which no command accepts: $(grep -lE -- "$f([^a-z0-9-]|$)" "$src"/README.md "$src"/docs/*.md | tr '\n' ' ')"
done <docflags
[ "$failures" -eq 0 ] || fail "$failures mismatches"
echo "ok: $(wc -l <accepted) options, $(wc -l <docflags) named in the docs"
