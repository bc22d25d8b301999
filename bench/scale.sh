#!/bin/sh
# bench/scale.sh — what `make bench-scale` runs (see bench/README.md, "Scale").
#
# build/bench/scale_bench (one plain MPI program of the common patterns) at
# each rank count, served three ways, one launch after the other (the order
# rotates from one rank count to the next):
#   lmpio  -x LD_PRELOAD=build/lib/liblmpio-mpi.so
#   ompio  --mca io ompio
#   romio  --mca io romio321
# every launch under `timeout`, --oversubscribe above 2 ranks; then one table
# row per pattern x rank count: microseconds per call of each, lmpio over the
# best peer, what lmpio and ROMIO hand to MPI per call per rank (messages,
# collective calls, bytes) and the peak RSS of the largest rank.  Every
# command line is printed as it runs, so any launch can be repeated by hand.
#
# With LMPIO_SCALE_CLUSTER=N it runs the benchmark once instead on the
# simulated cluster of core/test/cluster/cluster.sh grown to N nodes (as
# root), 2 ranks a node, files on the GlusterFS mount (coherent profile),
# through lmpio only (LMPIO_SCALE_BACKENDS to add others): a correctness run,
# "ok"/"not ok" per pattern, then the table of what the ranks handed to MPI
# across the nodes (its times are not figures); raw lines in $OUT.cluster.
#
# Environment (defaults):
#   LMPIO_SCALE_RANKS     rank counts ("1 2 4 8 16 32 64")
#   LMPIO_SCALE_BACKENDS  "lmpio ompio romio"
#   LMPIO_SCALE_DIR       directory of the files (/dev/shm)
#   LMPIO_SCALE_LAUNCHES  launches per backend and rank count, best kept (2)
#   LMPIO_SCALE_TIMEOUT   seconds per launch (900)
#   LMPIO_SCALE_OUT       raw RESULT lines (build/bench/scale.results)
#   LMPIO_SCALE_ROMIO_SKIP patterns not run on ROMIO ("nbcoll": Open MPI
#                         4.1.4's romio321 segfaults in MPI_File_iwrite_at_all)
#   LMPIO_SCALE_CLUSTER   nodes of the simulated cluster (unset: this machine)
# and, passed to every rank: LMPIO_SCALE_BUDGET (1 here), LMPIO_SCALE_MAXCALLS,
# LMPIO_SCALE_WARMUP,
# LMPIO_SCALE_PATTERNS, LMPIO_SCALE_SUB_N, LMPIO_BENCH_FILE_MB,
# LMPIO_BENCH_HINTS (see bench/scale_bench.c).
set -u

BUILD=${BUILD:-build}
MPIRUN=${MPIRUN:-mpirun}
RANKS=${LMPIO_SCALE_RANKS:-"1 2 4 8 16 32 64"}
BACKENDS=${LMPIO_SCALE_BACKENDS:-"lmpio ompio romio"}
DIR=${LMPIO_SCALE_DIR:-/dev/shm}
LAUNCHES=${LMPIO_SCALE_LAUNCHES:-2}
: "${LMPIO_SCALE_BUDGET:=1}"
TIMEOUT=${LMPIO_SCALE_TIMEOUT:-900}
OUT=${LMPIO_SCALE_OUT:-$BUILD/bench/scale.results}
ROMIO_SKIP=${LMPIO_SCALE_ROMIO_SKIP-nbcoll}
PATTERNS_ALL="open small twophase shared ordered nbcoll"
BENCH=$BUILD/bench/scale_bench
DROPIN=$BUILD/lib/liblmpio-mpi.so

for f in "$BENCH" "$DROPIN"; do
  [ -e "$f" ] || { echo "scale.sh: $f is not built (make lib benches)" >&2; exit 2; }
done
case $DROPIN in /*) ;; *) DROPIN=$(pwd)/$DROPIN ;; esac
case $BENCH in /*) ;; *) BENCH=$(pwd)/$BENCH ;; esac
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# The knobs of scale_bench that are set, as -x options (the ranks of a
# cluster do not inherit this shell's environment).
xs=
for v in LMPIO_SCALE_BUDGET LMPIO_SCALE_MAXCALLS LMPIO_SCALE_WARMUP LMPIO_SCALE_SUB_N LMPIO_BENCH_FILE_MB LMPIO_BENCH_HINTS; do
  eval "val=\${$v:-}"
  [ -n "$val" ] && xs="$xs -x $v=$val"
done

# how BACKEND [NP]: the mpirun options that choose BACKEND, and the patterns
# it runs (-x LMPIO_SCALE_PATTERNS).
how() {
  pats=${LMPIO_SCALE_PATTERNS:-$PATTERNS_ALL}
  pats=$(echo "$pats" | tr ',' ' ')
  case $1 in
    lmpio) opts="-x LD_PRELOAD=$DROPIN" ;;
    ompio) opts="--mca io ompio" ;;
    romio)
      opts="--mca io romio321"
      keep=
      for p in $pats; do
        case " $ROMIO_SKIP " in *" $p "*) ;; *) keep="$keep $p" ;; esac
      done
      pats=$keep ;;
    *) echo "scale.sh: no backend $1 (lmpio, ompio, romio)" >&2; exit 2 ;;
  esac
  # shellcheck disable=SC2086 # (split: one comma between names)
  opts="$opts -x LMPIO_SCALE_PATTERNS=$(echo $pats | tr ' ' ',')"
}

# ---- once across the simulated cluster ----------------------------------
if [ -n "${LMPIO_SCALE_CLUSTER:-}" ]; then
  n=$LMPIO_SCALE_CLUSTER
  hosts=
  i=1
  while [ "$i" -le "$n" ]; do
    hosts="$hosts${hosts:+,}node$i:2"
    i=$((i + 1))
  done
  BACKENDS=${LMPIO_SCALE_BACKENDS:-lmpio}
  status=0
  mkdir -p "$(dirname "$OUT")"
  : > "$OUT.cluster"
  for be in $BACKENDS; do
    how "$be"
    # shellcheck disable=SC2086
    set -- sh core/test/cluster/cluster.sh --nodes "$n" --hosts "$hosts" --profile coherent --timeout "$TIMEOUT" -- \
      $opts $xs -x LMPIO_SCALE_TAP=1 "$BENCH" @DIR@ "$be"
    echo "\$ $*"
    "$@" | tee -a "$OUT.cluster" | grep -v '^# RESULT '
    # (the status of the pipe's first command)
    tail -n 1 "$OUT.cluster" | grep -q ' 0 failed$' || status=1
  done
  # what the ranks handed to MPI across the nodes (times: not figures)
  sed -n 's/^# RESULT /RESULT /p' "$OUT.cluster" > "$OUT.cluster.results"
  sh "$(dirname "$0")/scale_table.sh" "$OUT.cluster.results"
  exit $status
fi

# ---- the rank counts on this machine --------------------------------------
mkdir -p "$(dirname "$OUT")"
: > "$OUT"
log=$OUT.log
: > "$log"
status=0
start=$(date +%s)
echo "scale.sh: ranks {$RANKS} x {$BACKENDS}, $LAUNCHES launch(es), files in $DIR"
echo "          raw lines in $OUT, output in $log; $(nproc) cores, $(uptime | sed 's/.*load/load/')"
cell=0
l=1
while [ "$l" -le "$LAUNCHES" ]; do
  for np in $RANKS; do
    # shellcheck disable=SC2086
    set -- $BACKENDS
    i=0
    while [ "$i" -lt $((cell % $#)) ]; do
      first=$1; shift; set -- "$@" "$first"; i=$((i + 1))
    done
    for be in "$@"; do
      how "$be"
      over=
      [ "$np" -gt 2 ] && over=--oversubscribe
      # shellcheck disable=SC2086
      set -- timeout -k 10 "$TIMEOUT" "$MPIRUN" $over -n "$np" $opts $xs "$BENCH" "$DIR" "$be"
      echo "\$ $*"
      s=$(date +%s)
      echo "== $*" >> "$log"
      "$@" < /dev/null > "$OUT.tmp" 2>&1
      rc=$?
      cat "$OUT.tmp" >> "$log"
      grep '^RESULT ' "$OUT.tmp" | sed "s/\$/ launch=$l/" >> "$OUT"
      if [ "$rc" -ne 0 ]; then
        echo "RESULT pattern=launch ranks=$np backend=$be rc=$rc ok=0 launch=$l" >> "$OUT"
        echo "    exit status $rc (last lines of the output in $log)"
        status=1
      fi
      echo "    $(($(date +%s) - s)) s, $(grep -c '^RESULT ' "$OUT.tmp") results"
    done
    cell=$((cell + 1))
  done
  l=$((l + 1))
done
rm -f "$OUT.tmp"
echo "scale.sh: $(($(date +%s) - start)) s; $(uptime | sed 's/.*load/load/')"

sh "$(dirname "$0")/scale_table.sh" "$OUT"
exit $status
