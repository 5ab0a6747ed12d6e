#!/usr/bin/env bash
# setup.sh DIR: installs the peers of bench/bench_peers.sh, pinned in bench/peers (package.json +
# package-lock.json: LangGraph.js, the OpenAI Agents SDK for JS and the node 22 they need, the
# node-linux-<cpu> package of the npm registry) into DIR/node_modules with the scripts beside
# them, once (again only when the lock file changes). Prints the node to run them with; exits 1
# with the reason when the install fails.
set -uo pipefail
dir=${1:?usage: setup.sh DIR}
src="$(cd "$(dirname "$0")" && pwd)"
fail() { echo "peers setup: $*" >&2; exit 1; }
case "$(uname -m)" in
  x86_64) cpu=x64 ;;
  aarch64) cpu=arm64 ;;
  *) fail "no pinned node for $(uname -m) in $src/package.json (x86_64 and aarch64 only)" ;;
esac
node="$dir/node_modules/node-linux-$cpu/bin/node"
mkdir -p "$dir" || fail "cannot create $dir"
cp "$src"/*.mjs "$dir/" || fail "cannot copy the scripts to $dir"
if ! { [ -f "$dir/.installed" ] && cmp -s "$src/package-lock.json" "$dir/.installed" && [ -x "$node" ]; }; then
  command -v npm >/dev/null || fail "npm is needed to install the peers (apt-get install npm)"
  rm -rf "${dir:?}/node_modules" "$dir/.installed"
  cp "$src/package.json" "$src/package-lock.json" "$dir/" || fail "cannot copy the package files to $dir"
  if ! (cd "$dir" && timeout 600 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >npm.log 2>&1); then
    fail "npm ci failed in $dir (see $dir/npm.log): $(tail -3 "$dir/npm.log")"
  fi
  [ -x "$node" ] || fail "npm ci did not install $node"
  cp "$src/package-lock.json" "$dir/.installed"
fi
echo "$node"
