#!/usr/bin/env bash
# update_golden.sh [GEN]
#
# Regenerates every golden file of tests/gen/golden from its spec with GEN
# (default: build/agentc-gen). Review the diff before committing it: a
# change in a golden file is a change in what the generator writes.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
gen=${1:-$root/build/agentc-gen}
case $gen in /*) ;; *) gen=$PWD/$gen ;; esac
cd "$root"
export UPDATE=1
bash tests/gen/golden.sh "$gen" spec/agent.fsm agent tests/gen/golden
for spec in tests/gen/golden/*.fsm; do
    name=$(basename "$spec" .fsm)
    bash tests/gen/golden.sh "$gen" "$spec" "$name" tests/gen/golden
done
