#!/usr/bin/env bash
# update_expected.sh [GEN]
#
# Rewrites tests/spec/invalid/*/expected from the current output of GEN
# (default: build/agentc-gen). Review the diff: every changed line is a
# changed diagnostic.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
gen=${1:-$root/build/agentc-gen}
case $gen in /*) ;; *) gen=$PWD/$gen ;; esac
cd "$root"
for dir in tests/spec/invalid/*/; do
    UPDATE=1 bash tests/spec/run_case.sh "$gen" "${dir}input.fsm" "${dir}expected"
done
