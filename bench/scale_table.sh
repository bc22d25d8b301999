#!/bin/sh
# bench/scale_table.sh RESULTS: the table of bench/scale.sh from its raw
# RESULT lines (so a table can be made again from a saved file).
#
# One row per pattern x rank count: us per call of lmpio, OMPIO and ROMIO
# (best over launches), lmpio over the best peer; per call per rank what
# lmpio and ROMIO handed to MPI (msg: point-to-point messages and puts/gets,
# coll: collective calls, KB: bytes of both, 1 KB = 1000 B); peak RSS of the
# largest rank in MiB for each; ok: every check passed in every launch.
awk '
function kv(   i, p) { delete f; for (i = 2; i <= NF; i++) { split($i, p, "="); f[p[1]] = p[2] } }
function us(x) { return x == "" ? "-" : (x >= 1e5 ? sprintf("%.0f", x) : x >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x)) }
function num(x, d) { return x == "" ? "-" : sprintf("%." d "f", x) }
function kb(x) { return x == "" ? "-" : sprintf("%.1f", x / 1000) }
function mib(x) { return x == "" ? "-" : sprintf("%.0f", x / 1024) }
/^RESULT / {
  kv()
  if (f["pattern"] == "launch") { failed[f["ranks"], f["backend"]] = f["rc"]; next }
  k = f["pattern"] SUBSEP f["ranks"]; b = f["backend"]
  if (!(f["ranks"] in rk)) { rk[f["ranks"]] = 1; nr++; R[nr] = f["ranks"] + 0 }
  if (!(f["pattern"] in pt)) pt[f["pattern"]] = 1
  if (!((k, b) in ok)) ok[k, b] = 1
  if (f["ok"] != 1) ok[k, b] = 0
  if (f["us_per_call"] == "") next
  if (!((k, b) in t) || f["us_per_call"] + 0 < t[k, b]) {
    t[k, b] = f["us_per_call"] + 0
    m[k, b] = f["msgs_per_call"]; c[k, b] = f["colls_per_call"]; y[k, b] = f["bytes_per_call"]
  }
  if (f["rss_max_kb"] + 0 > rss[k, b]) rss[k, b] = f["rss_max_kb"] + 0
}
END {
  # rank counts in numeric order
  for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++) if (R[j] < R[i]) { x = R[i]; R[i] = R[j]; R[j] = x }
  np = split("open small twophase shared shared_read ordered ordered_read nbcoll", P, " ")
  printf "\n%-12s %5s | %9s %9s %9s %6s | %-18s | %-18s | %-11s | %s\n", "", "", "us per call", "", "", "",
         "lmpio per call/rank", "romio per call/rank", "RSS MiB", ""
  printf "%-12s %5s | %9s %9s %9s %6s | %5s %5s %6s | %5s %5s %6s | %3s %3s %3s | %s\n", "pattern", "ranks",
         "lmpio", "ompio", "romio", "l/best", "msg", "coll", "KB", "msg", "coll", "KB", "l", "o", "r", "ok"
  for (a = 1; a <= np; a++) {
    if (!(P[a] in pt)) continue
    for (i = 1; i <= nr; i++) {
      k = P[a] SUBSEP R[i]
      L = t[k, "lmpio"]; O = t[k, "ompio"]; Rm = t[k, "romio"]
      best = ""
      if (O != "") best = O
      if (Rm != "" && (best == "" || Rm < best)) best = Rm
      ratio = (L != "" && best != "" && best > 0) ? sprintf("%.2f", L / best) : "-"
      good = "yes"
      for (b in be) {}
      split("lmpio ompio romio", B, " ")
      for (j = 1; j <= 3; j++) {
        if ((k, B[j]) in ok && !ok[k, B[j]]) good = (good == "yes" ? "" : good " ") "WRONG:" B[j]
        if ((R[i], B[j]) in failed && !((k, B[j]) in t)) good = (good == "yes" ? "" : good " ") "rc=" failed[R[i], B[j]] ":" B[j]
      }
      printf "%-12s %5d | %9s %9s %9s %6s | %5s %5s %6s | %5s %5s %6s | %3s %3s %3s | %s\n", P[a], R[i],
             us(L), us(O), us(Rm), ratio,
             num(m[k, "lmpio"], 1), num(c[k, "lmpio"], 2), kb(y[k, "lmpio"]),
             num(m[k, "romio"], 1), num(c[k, "romio"], 2), kb(y[k, "romio"]),
             mib(rss[k, "lmpio"]), mib(rss[k, "ompio"]), mib(rss[k, "romio"]), good
    }
  }
  print ""
  print "us per call: the slowest rank, best over launches; l/best: lmpio over the faster of OMPIO and ROMIO."
  print "open: one open + close; small: write_at_all or read_at_all of one int a rank; twophase: write_all or"
  print "read_all of a subarray; shared, ordered: write_shared, write_ordered of one record (_read: read_shared,"
  print "read_ordered); nbcoll: iwrite_at_all or iread_at_all + MPI_Wait of 4 KiB a rank.  msg, coll, KB: per"
  print "call per rank, averaged over the ranks, what the library handed to MPI (bench/scale_count.h): sends"
  print "and puts/gets, collective calls, their bytes.  lmpio exchanges through shared memory (no MPI call) among"
  print "the ranks of a node, up to 64 of them.  OMPIO calls MPI from inside Open MPI: not counted.  RSS: the"
  print "largest rank'"'"'s peak so far (patterns run in the order above).  ok: every check of every launch passed."
}' "$1"
