#!/usr/bin/env bash
# spec_edits.sh AGENTC JOURNAL...: edits of spec/agent.fsm that change no
# behaviour (comments only, whitespace only, declarations and transitions
# reordered) replay every given journal with `replay --check` and no
# divergence. Run from the source root. Journals recorded with a spec other
# than spec/agent.fsm are skipped (their header names the spec).
set -uo pipefail
agentc="$1"
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL (spec_edits.sh): $*" >&2; exit 1; }
spec=spec/agent.fsm

# comments only: a comment line before every line, and one after each declaration
awk '{ print "# edited " NR; print }' "$spec" >"$dir/comments.fsm"
# whitespace only: blank lines everywhere, wider gaps around arrows and commas
awk '{ print ""; print }' "$spec" | sed -e 's/ -> /   ->   /' -e 's/, /,   /g' >"$dir/whitespace.fsm"
# reordered: the param, event, guard and action lines each in reverse, the
# machines in reverse, and in `session` the transition on inactivity_timeout
# moved to the end of the machine
awk '
  /^(param|event|guard|action) / { kind = $1; decl[kind, ++n[kind]] = $0; if (!(kind in first)) { first[kind] = ++nout; out[nout] = "@" kind }; next }
  /^# ---- (session|agent|process):/ { block = $3; sub(/:$/, "", block) }
  block == "" { out[++nout] = $0; next }
  block == "session" && /Idle *-> Completed on inactivity_timeout/ { moved = $0; next }
  block == "session" && /^}/ && moved != "" { body[block] = body[block] moved "\n" }
  { body[block] = body[block] $0 "\n" }
  END {
    for (i = 1; i <= nout; i++) {
      if (substr(out[i], 1, 1) == "@") {
        k = substr(out[i], 2)
        for (j = n[k]; j >= 1; j--) print decl[k, j]
      } else print out[i]
    }
    printf "%s%s%s", body["process"], body["agent"], body["session"]
  }' "$spec" >"$dir/reordered.fsm"

for e in comments whitespace reordered; do
  cmp -s "$spec" "$dir/$e.fsm" && fail "$e.fsm is not edited"
  "$agentc" check "$dir/$e.fsm" >"$dir/check.out" 2>&1 || fail "$e.fsm does not check: $(cat "$dir/check.out")"
done
# the reordering moved transitions to other lines
[ "$(grep -n 'Created -> Idle' "$spec" | cut -d: -f1)" != \
  "$(grep -n 'Created -> Idle' "$dir/reordered.fsm" | cut -d: -f1)" ] || fail "reordering moved nothing"

n=0
for j in "$@"; do
  head -n1 "$j" | grep -q "\"spec\":\"$spec\"" || continue
  for e in comments whitespace reordered; do
    "$agentc" replay "$j" --check --spec "$dir/$e.fsm" >"$dir/out" 2>&1 \
      || fail "$j diverges under the $e edit: $(cat "$dir/out")"
    grep -q "every transition matches" "$dir/out" || fail "$j under $e: $(cat "$dir/out")"
  done
  n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no journal of $spec given"
echo "spec_edits: $n journals, no divergence"
