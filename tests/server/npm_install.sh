#!/usr/bin/env bash
# Installs the pinned npm packages the server tests use into DIR/node_modules:
# openai 6.10.0 (runs on node 20; 7.x needs node 22) and puppeteer-core is not used:
# the page test drives Debian's chromium over its DevTools protocol with node's WebSocket.
set -euo pipefail
dir=$1
command -v npm >/dev/null || { echo "npm is not installed" >&2; exit 1; }
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name": "agentc-server-tests", "private": true}' >package.json
timeout 300 npm install --no-audit --no-fund --silent --no-save openai@6.10.0
