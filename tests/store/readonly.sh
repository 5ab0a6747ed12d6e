#!/usr/bin/env bash
# A store this user may not write (another user's file in a directory they may not write, as a
# backup or a shared log is): `agentc sessions list`, `show` and `export` read it as it is,
# and what must write says it is read-only (not that the file is corrupt); a store still empty
# (or of an older schema) is opened as usual to be read.
set -uo pipefail
agentc=$(realpath "$1")
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL (readonly.sh:${BASH_LINENO[0]}): $*" >&2; exit 1; }
printf '{"content": "hello there"}\n' >"$tmp/script"
mkdir "$tmp/ro"
"$agentc" run --db "$tmp/ro/s.db" --session a --provider script --script "$tmp/script" hi >/dev/null 2>&1 \
  || fail "the store was not made"
as=() # run as another user when root (whom permissions do not stop), else as ourselves
if [ "$(id -u)" = 0 ]; then
  command -v setpriv >/dev/null || { echo "SKIP: setpriv needed as root"; exit 77; }
  as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  chmod 755 "$tmp" "$tmp/ro"; chmod 644 "$tmp/ro/s.db"
  # the build may sit where the other user cannot reach (root's home): run a copy from $tmp
  mkdir "$tmp/bin" && cp "$agentc" "$tmp/bin/agentc" && chmod 755 "$tmp/bin" "$tmp/bin/agentc" \
    && agentc="$tmp/bin/agentc" || fail "copying $agentc"
  "${as[@]}" test -x "$agentc" || fail "the other user cannot run $agentc"
else
  chmod 444 "$tmp/ro/s.db"; chmod 555 "$tmp/ro"
fi
rm -f "$tmp/ro/s.db-wal" "$tmp/ro/s.db-shm" 2>/dev/null
"${as[@]}" "$agentc" sessions list --db "$tmp/ro/s.db" >"$tmp/out" 2>"$tmp/err" || fail "list: $(cat "$tmp/err")"
grep -q '^a .*idle' "$tmp/out" || fail "list: $(cat "$tmp/out")"
"${as[@]}" "$agentc" sessions show a --db "$tmp/ro/s.db" >"$tmp/out" 2>"$tmp/err" || fail "show: $(cat "$tmp/err")"
grep -q '^hello there$' "$tmp/out" || fail "show: $(cat "$tmp/out")"
"${as[@]}" "$agentc" sessions export a --db "$tmp/ro/s.db" >"$tmp/out" 2>"$tmp/err" || fail "export: $(cat "$tmp/err")"
head -n1 "$tmp/out" | grep -q '"session":"a"' || fail "export: $(head -c 300 "$tmp/out")"
"${as[@]}" "$agentc" run --db "$tmp/ro/s.db" --session b --provider script --script "$tmp/script" hi \
  >/dev/null 2>"$tmp/err" && fail "a run wrote into a read-only store"
grep -q "read-only here" "$tmp/err" && ! grep -q corrupt "$tmp/err" || fail "the run says: $(cat "$tmp/err")"
[ ! -e "$tmp/ro/s.db-shm" ] && [ ! -e "$tmp/ro/s.db-wal" ] || fail "reading made files"
# a store a process stopped before its first write left empty: reading it is not refused
: >"$tmp/empty.db"
"$agentc" sessions show k1 --db "$tmp/empty.db" 2>"$tmp/err"
grep -q "has no session 'k1'" "$tmp/err" || fail "an empty store: $(cat "$tmp/err")"
"$agentc" sessions list --db "$tmp/empty.db" 2>&1 | grep -q "no sessions stored" || fail "an empty store's list"
echo ok
