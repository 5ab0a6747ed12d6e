#!/usr/bin/env bash
# `agentc check --tools FILE` on the cases of tests/cli/toolkits: NAME.json is
# the tool file; NAME.expect has the exit status on its first line and then
# lines that must each appear in the output. Then `agentc diagram --tools` and
# `agentc run --tools` refusing a file with reference problems.
agentc="$1"
. "$(dirname "$0")/lib.sh"
cases="$(dirname "$0")/toolkits"
n=0
for f in "$cases"/*.json; do
  name=$(basename "$f" .json)
  exp="$cases/$name.expect"
  [ -f "$exp" ] || fail "$name: no .expect file"
  want_rc=$(head -n1 "$exp")
  "$agentc" check --tools "$f" >"$tmp/out" 2>&1
  rc=$?
  [ "$rc" = "$want_rc" ] || fail "$name: exit $rc, wanted $want_rc: $(cat "$tmp/out")"
  tail -n +2 "$exp" | while IFS= read -r line; do
    [ -z "$line" ] && continue
    grep -qF -- "$line" "$tmp/out" || { echo "FAIL: $name: missing: $line"; echo "got:"; cat "$tmp/out"; exit 1; }
  done || exit 1
  n=$((n + 1))
done
[ "$n" -ge 10 ] || fail "only $n cases"

# the diagram: states as nodes, tools as edges, unreachable tools marked
"$agentc" diagram --tools examples/toolkits/plane.json >"$tmp/d.dot" || fail "diagram"
grep -q '^digraph toolkits' "$tmp/d.dot" || fail "not DOT"
grep -q '"plane/0" -> "plane/1" \[label="plane::login"\]' "$tmp/d.dot" || fail "login edge: $(cat "$tmp/d.dot")"
grep -q 'start: (no state on)\\noffers: login' "$tmp/d.dot" || fail "start node"
"$agentc" diagram --tools "$cases/unreachable_state.json" >"$tmp/u.dot" || fail "diagram 2"
grep -q 'never available:\\nunlock' "$tmp/u.dot" || fail "unreachable not drawn"
if command -v dot >/dev/null; then
  dot -Tsvg "$tmp/d.dot" >/dev/null 2>"$tmp/e" || fail "the DOT does not render: $(cat "$tmp/e")"
fi

# the engine refuses a file with reference problems, naming the first one
"$agentc" run --provider script --script /dev/null --tools "$cases/unknown_state.json" hi >"$tmp/o" 2>&1 && fail "run accepted a bad tool file"
grep -q 'unknown state "authenticated"' "$tmp/o" || fail "run message: $(cat "$tmp/o")"
"$agentc" check --tools >"$tmp/o" 2>&1 && fail "check --tools without a file"
grep -q 'usage: agentc check --tools FILE' "$tmp/o" || fail "usage"
echo "ok: $n check cases"
