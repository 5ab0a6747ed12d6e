# Reads Graphviz's -Tjson output; prints one line per pair of edges whose label boxes intersect
# (each label's box: the union of its text lines, a line as wide as Graphviz measured it and as
# tall as its font). Nothing printed: no two edge labels overlap.
def boxes:
  [.edges[]? | select(._ldraw_ != null) | . as $e
   | ([._ldraw_[] | select(.op == "F") | .size] | last // 14) as $size
   | [._ldraw_[] | select(.op == "T")
      | (if .align == "l" then .pt[0] elif .align == "r" then .pt[0] - .width
         else .pt[0] - .width / 2 end) as $x0
      | {x0: $x0, x1: ($x0 + .width), y0: (.pt[1] - $size * 0.25), y1: (.pt[1] + $size * 0.85)}]
   | select(length > 0)
   | {name: "\($e.tail)->\($e.head) \([$e._ldraw_[] | select(.op == "T") | .text] | join(" | "))",
      x0: (map(.x0) | min), x1: (map(.x1) | max), y0: (map(.y0) | min), y1: (map(.y1) | max)}];
def meets($a; $b): $a.x0 < $b.x1 and $b.x0 < $a.x1 and $a.y0 < $b.y1 and $b.y0 < $a.y1;
boxes as $b
| range(0; $b | length) as $i | range($i + 1; $b | length) as $j
| select(meets($b[$i]; $b[$j]))
| "\($b[$i].name)  overlaps  \($b[$j].name)"
