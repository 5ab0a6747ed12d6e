#!/usr/bin/env bash
# The project audits itself: `agentc coverage --fail-under` over the journals the test suite
# records. Every CLI test keeps the journals it recorded in AGENTC_TEST_JOURNALS/SCRIPT-SUM/ (lib.sh;
# the build's test-journals folder, set for every test in CMakeLists.txt); this test runs after
# all the others (DEPENDS) and adds spec/agent.fsm's generated suite (testgen --run), so it
# measures the same when run alone. Journals of other specs (the gallery's, tests' own) and
# unreadable ones (tests that cut journals on purpose) are left out. Prints the figure.
agentc="$1" min="$2"
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.." || exit 1
need jq
dir=${AGENTC_TEST_JOURNALS:-}
[ -n "$dir" ] || fail "AGENTC_TEST_JOURNALS is not set (CMakeLists.txt sets it for every test)"
mkdir -p "$dir" || fail "cannot create $dir"
rm -rf "$dir/testgen-suite"
"$agentc" testgen spec/agent.fsm --run --time-limit 200000 --out "$dir/testgen-suite" >/dev/null 2>"$tmp/e" || fail "testgen: $(cat "$tmp/e")"
list=() others=0 bad=0
while IFS= read -r -d '' j; do
  if ! head -n 1 "$j" | grep -q '"spec":"spec/agent.fsm"'; then others=$((others + 1)); continue; fi
  if "$agentc" coverage spec/agent.fsm "$j" >/dev/null 2>&1; then list+=("$j"); else bad=$((bad + 1)); fi
done < <(find "$dir" -type f -name '*.journal' -print0 | sort -z)
[ "${#list[@]}" -gt 0 ] || fail "no journal of spec/agent.fsm under $dir"
"$agentc" coverage spec/agent.fsm "${list[@]}" --json >"$tmp/c.json" || fail "coverage over the suite's journals"
tests=$(find "$dir" -mindepth 1 -maxdepth 1 -type d | wc -l)
echo "journals: ${#list[@]} of spec/agent.fsm from $tests tests ($others of other specs, $bad unreadable)"
jq -r '"transitions: \(.covered) of \(.total) taken (\(.percent * 10 | round / 10)%)"' "$tmp/c.json"
jq -r '.machines | to_entries[] | "  \(.key): \(.value.covered) of \(.value.total)"' "$tmp/c.json"
"$agentc" coverage spec/agent.fsm "${list[@]}" --fail-under "$min" >/dev/null 2>"$tmp/e" \
  || fail "the suite's journals take under $min% of spec/agent.fsm: $(cat "$tmp/e")"
echo "ok"
