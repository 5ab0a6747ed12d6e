#!/usr/bin/env bash
# Fails when the README's Mermaid block differs from the generated diagram.
set -euo pipefail
agentc="$1"
readme="${2:-README.md}"
expected=$("$agentc" diagram spec/agent.fsm --format mermaid)
actual=$(awk '/^```mermaid$/{on=1; next} /^```$/{if(on){exit}} on' "$readme")
if [ "$expected" != "$actual" ]; then
  echo "README.md's Mermaid diagram is stale; regenerate it with:" >&2
  echo "  agentc diagram spec/agent.fsm --format mermaid" >&2
  diff <(echo "$expected") <(echo "$actual") >&2 || true
  exit 1
fi
echo "README diagram matches spec/agent.fsm"
