# prom_check.awk - a strict parser of the Prometheus text format (version 0.0.4) for the tests.
# Fails (exit 1, the line and why on stderr) on anything the format does not allow: a malformed
# name, label or value, an unknown escape, a TYPE after its samples or given twice, a family
# whose samples are not together, a series given twice, a histogram whose buckets are not
# cumulative or lack le="+Inf" equal to _count, a counter not ending in _total. Prints each
# sample as "NAME{labels} VALUE" with its labels sorted, for the test to read.
function bad(why) { printf "prom_check: line %d: %s: %s\n", NR, why, $0 > "/dev/stderr"; err = 1; exit 1 }
function family(n,   b) {
  b = n
  if (b in type) return b
  if (b ~ /_bucket$/) { sub(/_bucket$/, "", b); if (type[b] == "histogram") return b }
  b = n; if (b ~ /_sum$/) { sub(/_sum$/, "", b); if (type[b] == "histogram") return b }
  b = n; if (b ~ /_count$/) { sub(/_count$/, "", b); if (type[b] == "histogram") return b }
  return n
}
function isnum(v) { return v ~ /^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$/ || v ~ /^[-+]?Inf$/ || v == "NaN" }
BEGIN { err = 0; cur = "" }
/^$/ { next }
/^#/ {
  if ($0 ~ /^# (HELP|TYPE) /) {
    if ($2 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/ && $3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) bad("bad metric name")
    name = $3
    if (name !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) bad("bad metric name")
    if ($2 == "TYPE") {
      if (NF != 4 || $4 !~ /^(counter|gauge|histogram|summary|untyped)$/) bad("bad TYPE")
      if (name in type) bad("TYPE given twice")
      if (name in seen) bad("TYPE after its samples")
      type[name] = $4
      if ($4 == "counter" && name !~ /_total$/) bad("a counter not named _total")
    } else {
      if (name in help) bad("HELP given twice")
      help[name] = 1
      if (index($0, "\\") && $0 ~ /\\[^\\n]/) bad("bad escape in HELP")
    }
  }
  next
}
{
  line = $0
  if (!match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) bad("bad sample name")
  name = substr(line, 1, RLENGTH); rest = substr(line, RLENGTH + 1)
  nl = 0; delete lk; delete lv
  if (substr(rest, 1, 1) == "{") {
    rest = substr(rest, 2)
    while (substr(rest, 1, 1) != "}") {
      if (!match(rest, /^[a-zA-Z_][a-zA-Z0-9_]*="/)) bad("bad label")
      k = substr(rest, 1, RLENGTH - 2); rest = substr(rest, RLENGTH + 1); v = ""
      for (;;) {
        c = substr(rest, 1, 1)
        if (c == "") bad("unterminated label value")
        if (c == "\"") { rest = substr(rest, 2); break }
        if (c == "\\") {
          d = substr(rest, 2, 1)
          if (d == "\\" || d == "\"") v = v d; else if (d == "n") v = v "\n"; else bad("bad escape")
          rest = substr(rest, 3); continue
        }
        v = v c; rest = substr(rest, 2)
      }
      for (i = 1; i <= nl; i++) if (lk[i] == k) bad("label given twice")
      lk[++nl] = k; lv[nl] = v
      if (substr(rest, 1, 1) == ",") rest = substr(rest, 2)
      else if (substr(rest, 1, 1) != "}") bad("expected , or }")
    }
    rest = substr(rest, 2)
  }
  if (substr(rest, 1, 1) != " ") bad("no space before the value")
  n = split(substr(rest, 2), parts, " ")
  if (n < 1 || n > 2 || !isnum(parts[1])) bad("bad value")
  if (n == 2 && parts[2] !~ /^-?[0-9]+$/) bad("bad timestamp")
  fam = family(name)
  if (fam != cur) { if (fam in done) bad("samples of a family not together"); if (cur != "") done[cur] = 1; cur = fam }
  seen[fam] = 1
  # sorted labels (insertion sort) as the series key
  for (i = 2; i <= nl; i++) for (j = i; j > 1 && lk[j - 1] > lk[j]; j--) {
    t = lk[j]; lk[j] = lk[j - 1]; lk[j - 1] = t; t = lv[j]; lv[j] = lv[j - 1]; lv[j - 1] = t }
  key = ""; base = ""; le = ""
  for (i = 1; i <= nl; i++) {
    key = key (i > 1 ? "," : "") lk[i] "=\"" lv[i] "\""
    if (lk[i] == "le") le = lv[i]; else base = base lk[i] "=\"" lv[i] "\","
  }
  series = name "{" key "}"
  if (series in vals) bad("series given twice")
  vals[series] = parts[1]
  if (type[fam] == "histogram") {
    if (name ~ /_bucket$/) {
      if (le == "" || !isnum(le)) bad("bucket without le")
      if ((fam, base) in last && parts[1] + 0 < last[fam, base]) bad("buckets not cumulative")
      last[fam, base] = parts[1] + 0
      if (le == "+Inf") inf[fam, base] = parts[1] + 0
    } else if (name ~ /_count$/) {
      if (!((fam, base) in inf) || inf[fam, base] != parts[1] + 0) bad("_count is not the +Inf bucket")
    }
  }
  print series " " parts[1]
}
