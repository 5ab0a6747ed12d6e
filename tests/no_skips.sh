#!/usr/bin/env bash
# no_skips.sh SOURCE_DIR: cmake/agentc_no_skips.cmake on a small project: a test exiting 77 (the
# tests' skip code) and one printing cmocka's "[  SKIPPED ]" fail by default, and are skipped and
# passed with AGENTC_ALLOW_SKIPS=ON.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat >"$tmp/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(no_skips NONE)
enable_testing()
option(AGENTC_ALLOW_SKIPS "" OFF)
add_test(NAME exit77 COMMAND sh -c "echo 'SKIP: no tool'; exit 77")
set_tests_properties(exit77 PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME cmocka_skip COMMAND sh -c "echo '[  SKIPPED ] test_x'")
add_test(NAME plain COMMAND true)
include($1/cmake/agentc_no_skips.cmake)
CMAKE
run() { # run ALLOW_SKIPS: configures and runs the project's tests, output in $tmp/out
  rm -rf "$tmp/b"
  timeout 60 cmake -S "$tmp" -B "$tmp/b" -DAGENTC_ALLOW_SKIPS="$1" >/dev/null
  rc=0
  timeout 60 ctest --test-dir "$tmp/b" >"$tmp/out" 2>&1 || rc=$?
}
run OFF
[ "$rc" != 0 ] || fail "ctest passed with skips not allowed: $(cat "$tmp/out")"
grep -q '2 tests failed out of 3' "$tmp/out" || fail "not both skips failed: $(cat "$tmp/out")"
run ON
[ "$rc" = 0 ] || fail "ctest failed with skips allowed: $(cat "$tmp/out")"
grep -q 'exit77 (Skipped)' "$tmp/out" || fail "exit 77 was not a skip: $(cat "$tmp/out")"
echo "skips fail by default, and are skips with AGENTC_ALLOW_SKIPS=ON"
