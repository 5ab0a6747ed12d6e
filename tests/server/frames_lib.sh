#!/usr/bin/env bash
# frames_lib.sh, sourced: an SSE capture's frames compared as the server's streams are.
# events FILE: a JSON object per frame ({id, event, data}); norm FILE: the same with each run
# of text (or reasoning) deltas joined into one, as a slow reader's are (a joined delta carries
# the id of its last); increasing FILE: the ids strictly increase; turns_done FILE N: at
# least N turn_done frames.
events() {
  awk 'BEGIN{id="";ev=""} /^id: /{id=substr($0,5)} /^event: /{ev=substr($0,8)}
       /^data: /{d=substr($0,7); printf "{\"id\":\"%s\",\"event\":\"%s\",\"data\":%s}\n", id, ev, d; id=""}' "$1"
}
joined() {
  jq -s -c 'reduce .[] as $e ([]; if length > 0 and .[-1].event == $e.event and ($e.event == "text" or $e.event == "reasoning")
    then .[-1] |= ($e + {data: ($e.data + {delta: (.data.delta + $e.data.delta)})}) else . + [$e] end) | .[]'
}
norm() { events "$1" | joined; }
frame_key='(split(".") | map(tonumber) | if length == 1 then . + [0] else . end)'
increasing() { events "$1" | jq -s -e "[.[] | select(.id != \"\") | .id | $frame_key] | . as \$k | all(range(1; length); \$k[.] > \$k[. - 1])" >/dev/null; }
turns_done() { [ "$(grep -c '^event: turn_done' "$1")" -ge "$2" ]; }
