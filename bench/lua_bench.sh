#!/bin/sh
# bench/lua_bench.sh — the Lua module's overhead against the C library (issue 3).
#
#   sh bench/lua_bench.sh            (after `make all`: needs build/bench/lua_bench
#                                     and build/lua/lmpio.so)
#
# For every ranks x file system, LMPIO_LUA_BENCH_LAUNCHES times, launches
# `build/bench/lua_bench --lua bench/lua_bench.lua DIR FS`: one process that
# runs the C workloads and, in a Lua state of its own, bench/lua_bench.lua's
# same workloads through the lmpio module, alternating C and Lua repetition
# by repetition (mode "same", the default: the machine's noise hits both
# alike).  LMPIO_LUA_BENCH_MODE=separate instead launches the C program and
# `lua5.4 bench/lua_bench.lua` as two processes, alternating which goes first.
# Then prints, per ranks x fs, the best ns per 8-byte call (C, Lua, the time
# Lua adds), the best MB/s of one 64 MiB write_at/read_at (C, Lua, Lua/C) and
# the rates of the data representations: native, external32 and the three
# forms of lmpio.register_datarep (formats, read/write with lmpio.byteswap,
# encode/decode), with their ratio to the read/write form.
#
# Environment:
#   LMPIO_LUA_BENCH_RANKS     "1 2"
#   LMPIO_LUA_BENCH_FS        "shm disk" (shm = LMPIO_BENCH_SHM_DIR or /dev/shm,
#                             disk = LMPIO_BENCH_DISK_DIR or /tmp; another word
#                             is taken as a directory)
#   LMPIO_LUA_BENCH_MODE      same (default) or separate (see above)
#   LMPIO_LUA_BENCH_LAUNCHES  launches per combination (2)
#   LMPIO_LUA_BENCH_N         small calls per repetition (200000)
#   LMPIO_LUA_BENCH_REPS      repetitions per launch, best kept (3)
#   LMPIO_LUA_BENCH_MB        size of the large transfer, MiB per rank (64)
#   LMPIO_LUA_BENCH_LARGE_REPS repetitions of the large transfer per launch (5)
#   LMPIO_LUA_BENCH_CONV_MB   converter transfers, MiB per rank (16)
#   LMPIO_LUA_BENCH_CODEC_MB  the same for encode/decode, one Lua call per item (1)
#   LMPIO_LUA_BENCH_CONV_REPS repetitions of each converter transfer per launch (5)
#   LMPIO_LUA_BENCH_PARTS     "small,large,conv" (any of them)
#   LMPIO_LUA_BENCH_TIMEOUT   seconds per launch (300)
#   BUILD, MPIRUN, LUA        as in the Makefile (build, mpirun, lua5.4)
# Speed is only printed, never asserted; the exit status is 1 when a launch
# failed or any data was wrong (ok=0).
set -u

BUILD=${BUILD:-build}
MPIRUN=${MPIRUN:-mpirun}
LUA=${LUA:-lua5.4}
RANKS=${LMPIO_LUA_BENCH_RANKS:-"1 2"}
FSS=${LMPIO_LUA_BENCH_FS:-"shm disk"}
SHM_DIR=${LMPIO_BENCH_SHM_DIR:-/dev/shm}
DISK_DIR=${LMPIO_BENCH_DISK_DIR:-/tmp}
LAUNCHES=${LMPIO_LUA_BENCH_LAUNCHES:-2}
MODE=${LMPIO_LUA_BENCH_MODE:-same}
TIMEOUT=${LMPIO_LUA_BENCH_TIMEOUT:-300}
OUT=${LMPIO_LUA_BENCH_OUT:-$BUILD/bench/lua_bench.results}
HERE=$(dirname "$0")

if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
LUA_CPATH_5_4="$BUILD/lua/?.so;;"
export LUA_CPATH_5_4

for f in "$BUILD/bench/lua_bench" "$BUILD/lua/lmpio.so"; do
  if [ ! -f "$f" ]; then
    echo "lua_bench.sh: $f is not built (make all)" >&2
    exit 1
  fi
done

status=0
run() { # side np dir fs
  if [ "$1" = both ]; then
    set -- timeout "$TIMEOUT" "$MPIRUN" --oversubscribe -n "$2" "$BUILD/bench/lua_bench" --lua "$HERE/lua_bench.lua" "$3" "$4"
  elif [ "$1" = c ]; then
    set -- timeout "$TIMEOUT" "$MPIRUN" --oversubscribe -n "$2" "$BUILD/bench/lua_bench" "$3" "$4"
  else
    set -- timeout "$TIMEOUT" "$MPIRUN" --oversubscribe -n "$2" "$LUA" "$HERE/lua_bench.lua" "$3" "$4"
  fi
  "$@" < /dev/null > "$OUT.tmp"
  rc=$?
  grep '^RESULT ' "$OUT.tmp" >> "$OUT"
  if [ "$rc" -ne 0 ]; then
    echo "lua_bench.sh: '$*' exited with $rc" >&2
    status=1
  fi
}

mkdir -p "$(dirname "$OUT")"
: > "$OUT"
echo "lua_bench: ranks {$RANKS} x fs {$FSS} x $LAUNCHES launch(es), mode $MODE; raw lines in $OUT"
l=1
while [ "$l" -le "$LAUNCHES" ]; do
  for np in $RANKS; do
    for fs in $FSS; do
      case $fs in
        shm) dir=$SHM_DIR ;;
        disk) dir=$DISK_DIR ;;
        *) dir=$fs ;;
      esac
      if [ "$MODE" = same ]; then order=both
      elif [ $((l % 2)) = 1 ]; then order="c lua"
      else order="lua c"; fi
      printf '  launch %s: -n %s %s (%s): %s\n' "$l" "$np" "$fs" "$dir" "$order"
      for side in $order; do run "$side" "$np" "$dir" "$fs"; done
    done
  done
  l=$((l + 1))
done
rm -f "$OUT.tmp"

awk -v fss="$FSS" -v ranks="$RANKS" -v launches="$LAUNCHES" -v mode="$MODE" '
function kv(   i, p) { delete f; for (i = 2; i <= NF; i++) { split($i, p, "="); f[p[1]] = p[2] } }
{
  kv()
  k = f["fs"] SUBSEP f["ranks"] SUBSEP f["side"] SUBSEP f["test"]
  if ("ns" in f) { v = f["ns"] + 0; if (!(k in best) || v < best[k]) best[k] = v }
  else { v = f["mbps"] + 0; if (!(k in best) || v > best[k]) best[k] = v }
  if ("paired_added_ns" in f) { pa[k] = pa[k] " " f["paired_added_ns"]; npa[k]++ }
  if ("paired_ratio" in f) { pa[k] = pa[k] " " f["paired_ratio"]; npa[k]++ }
  if (!(k in ok)) ok[k] = 1
  if (f["ok"] != 1) ok[k] = 0
  if ("calls" in f) calls = f["calls"]
  if ("bytes" in f && f["test"] ~ /^(write|read)[0-9]+m$/) mib = f["bytes"] / 1048576
  if ("bytes" in f && f["test"] ~ /^conv_/) cbytes[f["test"]] = f["bytes"]
}
function num(x, fmt) { return x == "" ? "-" : sprintf(fmt, x) }
# median of the paired values of key k over all launches, or "-"
function med(k,   n, v, i, j, t) {
  if (!(k in pa)) return "-"
  n = split(pa[k], v, " ")
  for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
  return n % 2 ? v[(n + 1) / 2] + 0 : (v[n / 2] + v[n / 2 + 1]) / 2
}
END {
  nsm = split("write8_string;write8_char;fh:write_at(off, s), s an 8-byte string|" \
              "write8_buffer;write8_byte;fh:write_at(off, lmpio.buffer(8))|" \
              "write8_array;write8_double;fh:write_at(off, lmpio.array(DOUBLE, 1))|" \
              "read8_buffer;read8_byte;fh:read_at(off, lmpio.buffer(8))|" \
              "read8_array;read8_double;fh:read_at(off, lmpio.array(DOUBLE, 1))", S, "|")
  nfs = split(fss, F, " "); nr = split(ranks, R, " ")
  miss = 0; bad = 0
  for (a = 1; a <= nfs; a++) for (b = 1; b <= nr; b++) {
    fs = F[a]; np = R[b]
    printf "\n== fs=%s ranks=%s ==\n", fs, np
    printf "%-44s %7s %7s %7s %7s  %-2s %s\n", "8-byte call (ns/call, best)", "C", "Lua", "added", "paired", "ok", "target: added < 1000 ns"
    for (i = 1; i <= nsm; i++) {
      split(S[i], p, ";"); lt = p[1]; ct = p[2]; what = p[3]
      kl = fs SUBSEP np SUBSEP "lua" SUBSEP lt; kc = fs SUBSEP np SUBSEP "c" SUBSEP ct
      if (!(kl in best) || !(kc in best)) { printf "%-44s %7s %7s %7s %7s  %-2s\n", what, "-", "-", "-", "-", "-"; continue }
      d = best[kl] - best[kc]; good = ok[kl] && ok[kc]; if (!good) bad = 1
      m = med(kl); ms = m == "-" ? "-" : sprintf("%+.0f", m)
      t = (m == "-" ? d : m) < 1000 ? "met" : "MISS"; if (t == "MISS") miss = 1
      printf "%-44s %7.0f %7.0f %+7.0f %7s  %-2d %s\n", what, best[kc], best[kl], d, ms, good, t
    }
    kn = fs SUBSEP np SUBSEP "lua" SUBSEP "nop_call"
    if (kn in best) printf "%-44s %7s %7.0f\n", "  (Lua loop + call of a no-op C function)", "", best[kn]
    printf "%-44s %7s %7s %7s %7s  %-2s %s\n", sprintf("%d MiB per rank (MB/s all ranks, best)", mib), "C", "Lua", "Lua/C", "paired", "ok", "target: Lua/C >= 0.98"
    for (d2 = 1; d2 <= 2; d2++) {
      op = d2 == 1 ? "write" : "read"; tn = op mib "m"
      kl = fs SUBSEP np SUBSEP "lua" SUBSEP tn; kc = fs SUBSEP np SUBSEP "c" SUBSEP tn
      what = sprintf("fh:%s_at(off, lmpio.array(DOUBLE, %d))", op, mib * 131072)
      if (!(kl in best) || !(kc in best)) { printf "%-44s %7s %7s %7s %7s  %-2s\n", what, "-", "-", "-", "-", "-"; continue }
      r = best[kl] / best[kc]; good = ok[kl] && ok[kc]; if (!good) bad = 1
      m = med(kl); ms = m == "-" ? "-" : sprintf("%.3f", m)
      t = (m == "-" ? r : m) >= 0.98 ? "met" : "MISS"
      printf "%-44s %7.0f %7.0f %7.3f %7s  %-2d %s\n", what, best[kc], best[kl], r, ms, good, t
    }
    # data representations (Lua side only): MB/s of native data, and the
    # ratio to the bulk form (Lua converters calling lmpio.byteswap)
    kb = fs SUBSEP np SUBSEP "lua" SUBSEP "conv_bulk_write"
    if (!(kb in best)) continue
    printf "%-44s %7s %7s %7s %7s  %-2s %s\n", sprintf("converters, %d MiB per rank (MB/s, best)", cbytes["conv_formats_write"] / 1048576), \
           "write", "read", "w/bulk", "r/bulk", "ok", "target: formats >= 0.5 x bulk"
    nc = split("conv_native;native (no conversion)|conv_external32;external32|" \
               "conv_formats;formats {DOUBLE = \">d\"}|conv_formats_f;formats {DOUBLE = \">f\"} (narrowing)|" \
               "conv_bulk;read/write + lmpio.byteswap|conv_codec;encode/decode + string.pack", CV, "|")
    for (i = 1; i <= nc; i++) {
      split(CV[i], p, ";")
      kw = fs SUBSEP np SUBSEP "lua" SUBSEP p[1] "_write"; kr = fs SUBSEP np SUBSEP "lua" SUBSEP p[1] "_read"
      what = p[2]
      if (p[1] == "conv_codec") what = sprintf("%s (%d MiB)", what, cbytes["conv_codec_write"] / 1048576)
      if (!(kw in best) || !(kr in best)) { printf "%-44s %7s %7s\n", what, "-", "-"; continue }
      rw = best[kw] / best[fs SUBSEP np SUBSEP "lua" SUBSEP "conv_bulk_write"]
      rr = best[kr] / best[fs SUBSEP np SUBSEP "lua" SUBSEP "conv_bulk_read"]
      good = ok[kw] && ok[kr]; if (!good) bad = 1
      t = ""
      if (p[1] == "conv_formats") t = (rw < rr ? rw : rr) >= 0.5 ? "met" : "MISS"
      printf "%-44s %7.0f %7.0f %7.2f %7.2f  %-2d %s\n", what, best[kw], best[kr], rw, rr, good, t
    }
  }
  printf "\nC = lmpio_file_write_at/read_at of the same 8 bytes (8 x MPI_CHAR for the string,\n"
  printf "8 x MPI_BYTE for the buffer, 1 x MPI_DOUBLE for the array) from build/bench/lua_bench;\n"
  printf "%d calls per repetition; best over %s launch(es) x the repetitions of each; ", calls, launches
  if (mode == "same") printf "C and Lua alternated\nrepetition by repetition in one process (Lua: liblua5.4.so.0 + build/lua/lmpio.so).\n"
  else printf "C and Lua in separate\nlaunches (lua5.4), alternating which goes first.\n"
  printf "paired = the median over all repetitions of Lua minus C (ns/call), resp. Lua MB/s over C MB/s,\n"
  printf "of the C and Lua runs of the same repetition (mode same only); the target is judged on it\n"
  printf "when present (robust to this shared machine'"'"'s noise), else on the best values.\n"
  printf "ok = 1 when every call succeeded and every byte written and read was checked right.\n"
  printf "converters: one write_at and one read_at of doubles through a view in each representation\n"
  printf "(bench/lua_bench.lua, part conv), best of the repetitions; MB/s of native data of all ranks.\n"
  exit bad
}' "$OUT" || status=1
exit $status
