#!/bin/sh
# bench/ior.sh — what `make bench-ior IOR=...` runs (see bench/README.md).
#
# A fixed IOR matrix through IOR's MPIIO backend, one unmodified IOR binary
# (not part of lmpio: its path is given), served three ways:
#   lmpio  the drop-in build/lib/liblmpio-mpi.so preloaded into the ranks,
#   ompio  --mca io ompio,
#   romio  --mca io romio321,
# one launch after the other for every cell of the matrix (the order rotates
# from cell to cell, so no backend always runs first).  Every launch checks
# who served it, and one that was not served by whom it claims fails the run
# instead of giving a ratio: IOR's --mpiio.showHints prints MPI_File_get_info,
# which has lmpio's key lmpio_version only under lmpio, and Open MPI's
# io_base_verbose names the component it picks at every open (none under
# lmpio, whose MPI_File_open never reaches Open MPI's io framework).
#
# Matrix: workload {easy, hard, 4k} x access {indep, coll} x fs {shm, disk}
#   easy  each rank one contiguous block, large transfers
#   hard  -t 47008 -b 47008 -s N: 47008-byte records interleaved by rank
#   4k    -t 4k -b 4k -s N: 4 KiB records interleaved by rank
# all with -a MPIIO -w -r -C -e -i REPS (coll adds -c).  IOR's summary gives
# max and mean MiB/s of write and read over the REPS iterations.
#
# Usage: sh bench/ior.sh /path/to/ior    (environment: see bench/README.md)
set -u

IOR=${1:-${IOR:-}}
BUILD=${BUILD:-build}
MPIRUN=${MPIRUN:-mpirun}
NP=${LMPIO_IOR_RANKS:-2}
FSS=${LMPIO_IOR_FS:-"shm disk"}
SHM_DIR=${LMPIO_IOR_SHM_DIR:-/dev/shm}
DISK_DIR=${LMPIO_IOR_DISK_DIR:-/var/tmp}
WORKLOADS=${LMPIO_IOR_WORKLOADS:-"easy hard 4k"}
ACCESSES=${LMPIO_IOR_ACCESS:-"indep coll"}
BACKENDS=${LMPIO_IOR_BACKENDS:-"lmpio ompio romio"}
REPS=${LMPIO_IOR_REPS:-3}
LAUNCHES=${LMPIO_IOR_LAUNCHES:-1}
EASY=${LMPIO_IOR_EASY:-"-t 1m -b 64m -s 1"}
HARD_S=${LMPIO_IOR_HARD_S:-2000}
K4_S=${LMPIO_IOR_4K_S:-8192}
EXTRA=${LMPIO_IOR_EXTRA:-}
TIMEOUT=${LMPIO_IOR_TIMEOUT:-300}
OUT=${LMPIO_IOR_OUT:-$BUILD/bench/ior.results}
DROPIN=$BUILD/lib/liblmpio-mpi.so
# Hints for lmpio's opens only, key=value,... (IOR's IOR_HINT__MPI__key
# variables), e.g. lmpio_collective_outcome=local.
LMPIO_HINTS=${LMPIO_IOR_LMPIO_HINTS:-}
lmpio_hints=
for kv in $(echo "$LMPIO_HINTS" | tr ',' ' '); do
  lmpio_hints="$lmpio_hints -x IOR_HINT__MPI__$kv"
done

if [ -z "$IOR" ] || [ ! -x "$IOR" ]; then
  echo "ior.sh: give the path of a built ior binary: make bench-ior IOR=/path/to/ior" >&2
  exit 2
fi
if [ ! -f "$DROPIN" ]; then
  echo "ior.sh: $DROPIN is not built (make lib)" >&2
  exit 2
fi
case $DROPIN in /*) ;; *) DROPIN=$(pwd)/$DROPIN ;; esac
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
over=
[ "$NP" -gt 2 ] && over=--oversubscribe

mkdir -p "$(dirname "$OUT")"
: > "$OUT"
log=$OUT.log
: > "$log"
status=0
echo "ior.sh: $IOR, $NP ranks, {$WORKLOADS} x {$ACCESSES} x {$FSS} x {$BACKENDS}, -i $REPS, $LAUNCHES launch(es)${LMPIO_HINTS:+, lmpio hints $LMPIO_HINTS}"
echo "        raw lines in $OUT, IOR output in $log; load: $(uptime | sed 's/.*load/load/')"

# One launch: run IOR for workload $1, access $2, fs $3 (dir $4), backend $5,
# launch $6; append RESULT lines to $OUT.
launch() {
  w=$1 acc=$2 fs=$3 dir=$4 be=$5 l=$6
  case $w in
    easy) size=$EASY ;;
    hard) size="-t 47008 -b 47008 -s $HARD_S" ;;
    4k) size="-t 4k -b 4k -s $K4_S" ;;
  esac
  coll=
  [ "$acc" = coll ] && coll=-c
  case $be in
    lmpio) how="-x LD_PRELOAD=$DROPIN$lmpio_hints" ;;
    ompio) how="--mca io ompio" ;;
    romio) how="--mca io romio321" ;;
  esac
  how="$how --mca io_base_verbose 10"
  file=$dir/lmpio-ior.$$
  printf '  %-4s %-5s %-4s %-5s ' "$w" "$acc" "$fs" "$be"
  # shellcheck disable=SC2086
  set -- timeout "$TIMEOUT" "$MPIRUN" $over -n "$NP" $how "$IOR" -a MPIIO -w -r -C -e \
    -i "$REPS" $coll $size $EXTRA --mpiio.showHints -o "$file"
  echo "== $*" >> "$log"
  "$@" < /dev/null > "$OUT.tmp" 2>&1
  rc=$?
  cat "$OUT.tmp" >> "$log"
  rm -f "$file"
  # Who served the opens: lmpio (its info key) and which io components.
  lmpio=no
  grep -q 'lmpio_version' "$OUT.tmp" && lmpio=yes
  comps=$(sed -n 's/.*io:base:file_select: Selected io module \([a-z0-9]*\).*/\1/p;
                  s/.*io:base:file_select: component available: \([a-z0-9]*\),.*/\1/p' "$OUT.tmp" |
          sort -u | tr '\n' ' ')
  want=
  case $be in ompio) want="ompio " ;; romio) want="romio321 " ;; esac
  bad=
  if [ "$rc" -ne 0 ]; then bad="exit status $rc"
  elif grep -q 'ERROR\|WARNING' "$OUT.tmp"; then bad="IOR reported an error or warning"
  elif [ "$be" = lmpio ] && [ "$lmpio" = no ]; then bad="not served by lmpio (no lmpio_version in the hints)"
  elif [ "$be" != lmpio ] && [ "$lmpio" = yes ]; then bad="served by lmpio, not by $be"
  elif [ "$comps" != "$want" ]; then bad="Open MPI io components used: '$comps', expected '$want'"
  fi
  # The summary: "write  Max(MiB) Min(MiB) Mean(MiB) ...", one line per op.
  awk -v w="$w" -v acc="$acc" -v fs="$fs" -v be="$be" -v l="$l" -v np="$NP" -v ok="$([ -z "$bad" ] && echo 1 || echo 0)" '
    /^Summary of all tests:/ { s = 1; next }
    s && ($1 == "write" || $1 == "read") {
      printf "RESULT workload=%s access=%s fs=%s op=%s ranks=%s backend=%s launch=%s max=%s mean=%s ok=%s\n",
             w, acc, fs, $1, np, be, l, $2, $4, ok
      printf "%s max %s mean %s  ", $1, $2, $4 > "/dev/stderr"
    }' "$OUT.tmp" >> "$OUT" 2>"$OUT.line"
  cat "$OUT.line"
  if [ -n "$bad" ]; then
    echo "FAILED: $bad"
    status=1
  else
    echo
  fi
  rm -f "$OUT.tmp" "$OUT.line"
}

l=1
cell=0
while [ "$l" -le "$LAUNCHES" ]; do
  for w in $WORKLOADS; do
    for acc in $ACCESSES; do
      for fs in $FSS; do
        case $fs in
          shm) dir=$SHM_DIR ;;
          disk) dir=$DISK_DIR ;;
          *) dir=$fs ;; # any other word is taken as a directory
        esac
        # Rotate the order of the backends from one cell to the next.
        # shellcheck disable=SC2086
        set -- $BACKENDS
        i=0
        while [ "$i" -lt $((cell % $#)) ]; do
          first=$1; shift; set -- "$@" "$first"; i=$((i + 1))
        done
        for be in "$@"; do
          launch "$w" "$acc" "$fs" "$dir" "$be" "$l"
        done
        cell=$((cell + 1))
      done
    done
  done
  l=$((l + 1))
done

# Best max and best mean MiB/s per cell and backend over all launches.
awk -v wl="$WORKLOADS" -v accs="$ACCESSES" -v fss="$FSS" -v np="$NP" -v reps="$REPS" '
function kv(   i, p) { for (i = 2; i <= NF; i++) { split($i, p, "="); f[p[1]] = p[2] } }
function ratio(a, b) { return (a > 0 && b > 0) ? sprintf("%.2f", a / b) : "-" }
function mib(x) { return x > 0 ? sprintf("%.0f", x) : "-" }
function max2(a, b) { return a > b ? a : b }
/^RESULT / {
  delete f; kv()
  k = f["workload"] SUBSEP f["access"] SUBSEP f["fs"] SUBSEP f["op"] SUBSEP f["backend"]
  if (f["max"] + 0 > mx[k]) mx[k] = f["max"] + 0
  if (f["mean"] + 0 > mn[k]) mn[k] = f["mean"] + 0
  if (!(k in ok)) ok[k] = 1
  if (f["ok"] != 1) ok[k] = 0
}
END {
  nw = split(wl, W, " "); na = split(accs, A, " "); nf = split(fss, F, " ")
  printf "\n== IOR -a MPIIO -w -r -C -e -i %s, %s ranks: MiB/s (IOR max of the iterations) and lmpio ratios ==\n", reps, np
  printf "%-4s %-5s %-4s %-5s %8s %8s %8s  %7s %7s %7s  %9s  %s\n", "wl", "acc", "fs", "op",
         "lmpio", "ompio", "romio", "l/ompio", "l/romio", "l/best", "mean:best", "ok"
  for (a = 1; a <= nw; a++) for (b = 1; b <= na; b++) for (c = 1; c <= nf; c++) for (d = 1; d <= 2; d++) {
    op = d == 1 ? "write" : "read"
    k = W[a] SUBSEP A[b] SUBSEP F[c] SUBSEP op
    L = mx[k, "lmpio"]; O = mx[k, "ompio"]; R = mx[k, "romio"]
    good = 1
    if ((k, "lmpio") in ok && !ok[k, "lmpio"]) good = 0
    if ((k, "ompio") in ok && !ok[k, "ompio"]) good = 0
    if ((k, "romio") in ok && !ok[k, "romio"]) good = 0
    if (!((k, "lmpio") in ok) && !((k, "ompio") in ok) && !((k, "romio") in ok)) continue
    printf "%-4s %-5s %-4s %-5s %8s %8s %8s  %7s %7s %7s  %9s  %s\n", W[a], A[b], F[c], op,
           mib(L), mib(O), mib(R), ratio(L, O), ratio(L, R), ratio(L, max2(O, R)),
           ratio(mn[k, "lmpio"], max2(mn[k, "ompio"], mn[k, "romio"])), good
  }
  print ""
  print "easy: each rank one contiguous block; hard: -t 47008 -b 47008 -s N; 4k: -t 4k -b 4k -s N;"
  print "coll adds -c.  lmpio = the same IOR binary with liblmpio-mpi.so preloaded; ompio, romio ="
  print "--mca io ompio, romio321.  l/best = lmpio over the better of OMPIO and ROMIO (max MiB/s);"
  print "mean:best the same ratio of IOR'"'"'s mean MiB/s.  ok = 1 when every launch exited 0, IOR"
  print "printed no error or warning, and every open was served by the backend asked for."
}' "$OUT"
exit $status
