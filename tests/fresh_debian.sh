#!/usr/bin/env bash
# tests/fresh_debian.sh [WORKDIR]: the README's Quick start on a fresh Debian 12.
#
# As root on a Debian-like machine with debootstrap: makes a minimal Debian 12 (bookworm) chroot
# from the Debian archive this machine's apt uses, clones the repository's HEAD into it and runs
# the two commands of the README's Quick start there as root, one after the other (each bounded
# by a timeout), then prints each command's result and the test summary. It passes when both
# commands exit 0 and ctest reports every test passed, none skipped or not run.
#
# WORKDIR (default: a new folder under /var/tmp) holds the chroot and the full log (log.txt);
# it is removed after a pass unless AGENTC_FRESH_KEEP=1. AGENTC_DEBIAN_TARBALL=FILE keeps the
# downloaded base system in FILE (made on the first run, unpacked on the next ones).
set -euo pipefail
src="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
[ "$(id -u)" = 0 ] || { echo "fresh_debian: run as root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "fresh_debian: apt-get install debootstrap" >&2; exit 2; }

# The Debian archive and its security archive, as this machine's apt names them.
apt_uris() {
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
    2>/dev/null | sed -n -e 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/p' -e 's/^URIs: *//p' \
    | tr ' ' '\n' | sed 's:/*$::' | grep -E "$1" | head -1
}
mirror=$(apt_uris "/debian$" || true); mirror=${mirror:-http://deb.debian.org/debian}
security=$(apt_uris "/debian-security$" || true); security=${security:-http://deb.debian.org/debian-security}

work=${1:-$(mktemp -d /var/tmp/agentc-fresh-debian.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
root=$work/root
log=$work/log.txt
[ ! -e "$root" ] || { echo "fresh_debian: $root exists; give a new WORKDIR" >&2; exit 2; }

cleanup() {
  # Whatever still runs inside the chroot (a server a test left behind) goes first.
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  for m in dev sys proc; do
    mountpoint -q "$root/$m" && { umount -R "$root/$m" 2>/dev/null || umount -R -l "$root/$m"; }
  done
  return 0
}
trap cleanup EXIT INT TERM

echo "== debootstrap bookworm (minbase) from $mirror into $root"
tarball=${AGENTC_DEBIAN_TARBALL:-}
if [ -n "$tarball" ] && [ ! -f "$tarball" ]; then
  timeout 1800 debootstrap --variant=minbase --make-tarball="$tarball" bookworm "$work/tarball-tmp" \
    "$mirror" >>"$log" 2>&1
fi
timeout 1800 debootstrap --variant=minbase ${tarball:+--unpack-tarball="$tarball"} bookworm "$root" \
  "$mirror" >>"$log" 2>&1 || { echo "debootstrap failed: see $log"; tail -5 "$log"; exit 1; }
cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
SOURCES
cp /etc/resolv.conf "$root/etc/resolv.conf"
# Certificate authorities this machine trusts beyond Debian's (a TLS-inspecting proxy's) are
# handed to node in the chroot, so that npm reaches the registry as it does here.
extra_ca=/etc/ssl/host-extra-ca.pem
mkdir -p "$root/etc/ssl"
awk '/-----BEGIN CERTIFICATE-----/ { b = ""; pem = $0 "\n"; inb = 1; next }
     /-----END CERTIFICATE-----/ { inb = 0; pem = pem $0 "\n"
       if (FILENAME ~ /\/mozilla\//) known[b] = 1; else if (!(b in known)) printf "%s", pem; next }
     inb { b = b $0; pem = pem $0 "\n" }' /usr/share/ca-certificates/mozilla/*.crt \
  /etc/ssl/certs/ca-certificates.crt >"$root$extra_ca" 2>/dev/null || true
node_ca=()
if [ -s "$root$extra_ca" ]; then
  node_ca=("NODE_EXTRA_CA_CERTS=$extra_ca")
  echo "== $(grep -c BEGIN "$root$extra_ca") certificate authorities of this machine beyond Debian's given to node"
fi
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" # no services start in the chroot
chmod +x "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --rbind /dev "$root/dev"
mount --make-rslave "$root/dev"

head=$(git -C "$src" rev-parse HEAD)
echo "== clone $src at $head into /root/agentc"
git clone -q --no-checkout "$src" "$root/root/agentc"
git -C "$root/root/agentc" checkout -q "$head"

# The Quick start block: its lines that are not comments, which must be exactly two.
mapfile -t cmds < <(awk '/^## Quick start/{q=1} q&&/^```sh/{b=1;next} b&&/^```/{exit} b' \
  "$root/root/agentc/README.md" | grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$')
[ "${#cmds[@]}" = 2 ] || { echo "README's Quick start has ${#cmds[@]} commands, not 2"; exit 1; }

status=0
for i in 0 1; do
  echo "== command $((i + 1)): ${cmds[$i]}"
  rc=0
  timeout 5400 chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${node_ca[@]}" \
    bash -c "cd /root/agentc && ${cmds[$i]}" >"$work/command$((i + 1)).txt" 2>&1 || rc=$?
  cat "$work/command$((i + 1)).txt" >>"$log"
  tail -n 25 "$work/command$((i + 1)).txt"
  echo "== command $((i + 1)) exit status: $rc"
  [ "$rc" = 0 ] || status=1
done

out=$work/command2.txt
if ! grep -q '^100% tests passed, 0 tests failed out of [0-9]' "$out"; then
  echo "FAIL: ctest did not report every test passed"; status=1
fi
if grep -E -q 'tests did not run|\*\*\*Skipped|Not Run|\[  SKIPPED \]' "$out"; then
  echo "FAIL: tests skipped or not run:"
  grep -E 'tests did not run|\*\*\*Skipped|Not Run|\[  SKIPPED \]' "$out"; status=1
fi
echo "== node in the chroot: Debian's $(chroot "$root" node --version 2>&1 || true), the tests' \
$(chroot "$root" /root/agentc/build/node/bin/node --version 2>&1 || true)"
if [ "$status" = 0 ]; then
  echo "PASS: the README's two commands on a fresh Debian 12 (HEAD $head), no test skipped"
  cleanup
  [ "${AGENTC_FRESH_KEEP:-0}" = 1 ] || rm -rf --one-file-system "$work"
else
  echo "FAIL: see $log (the chroot stays in $root)"
fi
exit "$status"
