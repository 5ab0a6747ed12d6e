#!/usr/bin/env bash
# Fails when the README's Mermaid blocks differ from the generated diagrams: the
# machine overview first, then one diagram per machine of spec/agent.fsm.
set -euo pipefail
agentc="$1"
readme="${2:-README.md}"
expected=$("$agentc" diagram spec/agent.fsm --format overview
  for m in session agent process; do
    echo "----"
    "$agentc" diagram spec/agent.fsm --machine "$m"
  done)
actual=$(awk '/^```mermaid$/{on=1; if (n++) print "----"; next} /^```$/{on=0} on' "$readme")
if [ "$expected" != "$actual" ]; then
  echo "README.md's Mermaid diagrams are stale; regenerate them with:" >&2
  echo "  agentc diagram spec/agent.fsm --format overview; agentc diagram spec/agent.fsm --machine M" >&2
  diff <(echo "$expected") <(echo "$actual") >&2 || true
  exit 1
fi
echo "README diagrams match spec/agent.fsm"
