#!/usr/bin/env bash
# npm_setup.sh DIR: installs the reference MCP servers pinned in tests/mcp/npm
# (package.json + package-lock.json) into DIR/node_modules, once (again only when
# the lock file changes). Exit 0 when they are there, 77 (the tests' skip code)
# with a message when npm is missing or the install fails.
set -uo pipefail
dir=$1
src="$(cd "$(dirname "$0")/npm" && pwd)"
if [ -f "$dir/.installed" ] && cmp -s "$src/package-lock.json" "$dir/.installed" \
  && [ -f "$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "SKIP: npm is not installed"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node is not installed"; exit 77; }
mkdir -p "$dir" || exit 77
cp "$src/package.json" "$src/package-lock.json" "$dir/" || exit 77
if ! (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >npm.log 2>&1); then
  echo "SKIP: npm ci failed in $dir (see $dir/npm.log): $(tail -3 "$dir/npm.log")"
  exit 77
fi
cp "$src/package-lock.json" "$dir/.installed"
echo "installed the reference MCP servers into $dir"
