#!/bin/sh
# A toy Plane client for the toolkit example: the arguments arrive on stdin,
# the toolkit's context in AGENTC_CONTEXT.
args=$(cat)
case "$1" in
login) echo "logged in" ;;
select)
    p=$(printf '%s' "$args" | sed -n 's/.*"project" *: *"\([^"]*\)".*/\1/p')
    printf '{"result": "selected %s", "context": {"selected_project": "%s"}}\n' "$p" "$p" ;;
deselect) echo "deselected" ;;
edit) printf 'edited in %s\n' "$AGENTC_CONTEXT" ;;
*) echo "unknown command $1" >&2; exit 2 ;;
esac
