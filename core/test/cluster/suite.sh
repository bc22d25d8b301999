#!/bin/sh
# The cluster suite (make check-cluster; make check runs it where the machine
# allows, core/test/check.sh): builds the simulated cluster of cluster.sh
# (two nodes, or NODES) once, then
#   - RUNS times over (the failures it looks for are races), in every client
#     profile, the multi-node checks of multinode.c, NODES nodes x 2 ranks,
#     through each of IMPLS, judged on the ranks and on the brick; on the
#     `default` profile a check whose calls returned an error passes (a
#     library may refuse what it cannot do there), wrong bytes never;
#     and the same with 4 ranks on one node, on the direct-I/O mount;
#   - SUITE_RUNS times, lmpio's C suites that concern ranks on several
#     machines (SUITES), with their files on the volume, in the coherent and
#     nocache profiles (on `default`, lmpio may refuse what the C suites
#     expect to work).
# Environment:
#   NODES       nodes of the cluster (2)
#   RUNS        runs of the multi-node checks per profile (2)
#   SUITE_RUNS  runs of the C suites per profile (1)
#   PROFILES    coherent nocache default
#   IMPLS       lmpio (the drop-in library, LD_PRELOAD: DROPIN_LIB, by default
#               $BUILD/lib/liblmpio-mpi.so), capi (lmpio's C API),
#               ompio, romio (Open MPI's own MPI-IO; expect failures there):
#               "lmpio capi"
#   SUITES      test[:cases];... (cases: LMPIO_TEST_ONLY's syntax, a|b)
#   BUDGET      seconds; past them what is left is not run, and that is one
#               failure (720)
#   TABLE=1     a table of clean runs per check at the end
# Output: "ok"/"not ok" lines labelled [what profile #run], "# " notes, and
# last "N passed, N failed".
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
RUNS=${RUNS:-2}
SUITE_RUNS=${SUITE_RUNS:-1}
PROFILES=${PROFILES:-coherent nocache default}
IMPLS=${IMPLS:-lmpio capi}
BUDGET=${BUDGET:-720}
# The cases that concern several machines: the shared pointer and ordered
# collectives (in LOCK mode: a mapped pointer needs one kernel), two-phase
# with default hints, concurrent data sieving, atomic mode, open/delete/sync,
# aggregators by node.  Left out: cases that assume every rank on one kernel
# (shfp item 10's /dev/shm fallback, nodes_test's one-node layout); file_test's
# DELETE_ON_CLOSE case (the other machine's dentry cache keeps the deleted
# name visible for its entry timeout); access_test's concurrent sieved writes
# with 256-byte windows (on a caching client they go piece by piece, each
# window flushed: minutes; the multinode sieve check covers the path).
# The C tests run with LMPIO_TEST_SMALL=1 (cases that loop over many items
# take fewer: access_test's atomic mode writes 1024 ints a call, not 50000,
# each a round trip there) and LMPIO_TEST_TIMES=1 (each case's time).
SUITES=${SUITES-shared_test:[locked helper];shfp_test;file_test;collective_test:[automatic];\
access_test:atomic mode|failed writes;nodes_test}
SKIP="a directory that takes no new file|one node: every rank aggregates|DELETE_ON_CLOSE"
# shellcheck disable=SC2034 # (read by cluster.sh)
CLUSTER_LIB=1
# shellcheck disable=SC2034 # (read by cluster.sh)
CL_NODES=${NODES:-2}
# shellcheck source=core/test/cluster/cluster.sh
. "$(dirname "$0")/cluster.sh"

if [ "${1:-}" = --why-not ]; then
  cl_why_not
  exit 0
fi
why=$(cl_why_not)
[ -z "$why" ] && ! cl_deps && why="glusterfs is not installed and apt-get could not install it"
if [ -n "$why" ]; then
  echo "skip cluster: $why"
  exit 0
fi
log=$(mktemp)
start=$(date +%s)

# impl_run LABEL PROFILE IMPL NODES: multinode once.
impl_run() {
  refusal=0
  [ "$2" = default ] && refusal=1
  prog=$BUILD/cluster/multinode
  case $3 in
  lmpio) set -- "$1" "$2" "$3" "$4" -x LD_PRELOAD="${DROPIN_LIB:-$BUILD/lib/liblmpio-mpi.so}" -x MULTINODE_EXPECT_LMPIO=1 ;;
  capi) prog=$BUILD/cluster/multinode-capi; set -- "$1" "$2" "$3" "$4" -x MULTINODE_EXPECT_LMPIO=1 ;;
  ompio) set -- "$1" "$2" "$3" "$4" --mca io ompio ;;
  romio) set -- "$1" "$2" "$3" "$4" --mca io romio321 ;;
  *) echo "not ok [$1] no MPI-IO called $3"; CL_FAILED=$((CL_FAILED + 1)); return ;;
  esac
  label=$1 profile=$2 nodes=$4
  shift 4
  cl_run "$label" "$profile" 120 "$BUILD/cluster/multinode --verify @BRICK@" "$@" \
    -x MULTINODE_NODES="$nodes" -x MULTINODE_REFUSAL_OK=$refusal "$prog" @DIR@
}

# over_budget: whether the time is up (then says so once, as a failure).
over_budget() {
  [ $(($(date +%s) - start)) -lt "$BUDGET" ] && return 1
  if [ -z "${budget_said:-}" ]; then
    echo "not ok [cluster] time budget of $BUDGET s used up: the rest is not run"
    CL_FAILED=$((CL_FAILED + 1))
    budget_said=1
  fi
  return 0
}

body() {
  # shellcheck disable=SC2086
  if ! cl_up $PROFILES; then
    echo "not ok [cluster] could not be built"
    echo "0 passed, 1 failed"
    return
  fi
  echo "# cluster of $CL_NODES nodes built in $(($(date +%s) - start)) s: $CL_DIR"
  r=1
  while [ "$r" -le "$RUNS" ]; do
    for p in $PROFILES; do
      for impl in $IMPLS; do
        over_budget || impl_run "$impl $p #$r" "$p" "$impl" "$CL_NODES"
      done
      [ "$p" = coherent ] || continue
      # shellcheck disable=SC2034 # (read by cl_run)
      CL_HOSTS=node1:4
      for impl in $IMPLS; do
        over_budget || impl_run "$impl one-node $p #$r" "$p" "$impl" 1
      done
      # shellcheck disable=SC2034
      CL_HOSTS=
    done
    r=$((r + 1))
  done
  r=1
  while [ "$r" -le "$SUITE_RUNS" ]; do
    for p in $PROFILES; do
      [ "$p" = default ] && continue
      IFS=';'
      for spec in $SUITES; do
        unset IFS
        t=${spec%%:*}
        only=
        case $spec in *:*) only=${spec#*:} ;; esac
        [ -x "$BUILD/test/$t" ] || continue
        over_budget && continue
        s=$(date +%s)
        cl_run "$t $p #$r" "$p" 120 "" --mca io romio321 -x LMPIO_TEST_ONLY="$only" -x LMPIO_TEST_SKIP="$SKIP" \
          -x LMPIO_TEST_SMALL=1 -x LMPIO_TEST_TIMES=1 "$BUILD/test/$t"
        echo "# $t $p: $(($(date +%s) - s)) s"
      done
      unset IFS
    done
    r=$((r + 1))
  done
  echo "# cluster suite: $(($(date +%s) - start)) s"
  echo "$CL_PASSED passed, $CL_FAILED failed"
}

# The cluster's directory is made here, so that the traps find what the
# body started in it (its PID files) whenever they run.
CL_DIR=$(mktemp -d /var/tmp/lmpio-cluster.XXXXXX) || exit 1
# (the body runs in the background so that a signal reaches the traps at once)
trap 'kill $body_pid $tail_pid 2>/dev/null; cl_down; rm -f "$log"' EXIT
trap 'exit 130' INT TERM HUP
body >"$log" 2>&1 &
body_pid=$!
tail -n +1 -f --pid=$body_pid "$log" &
tail_pid=$!
wait $body_pid
wait $tail_pid
if [ "${TABLE:-}" = 1 ]; then
  echo "# clean runs / runs, per check:"
  sed -n 's/^\(not \)\{0,1\}ok \[\([^]]*\) #[0-9]*\] \(.*\)$/\1|\2|\3/p' "$log" | sed 's/ (.*$//; s/ # .*$//' |
    awk -F'|' '{ k = $2 " | " $3; n[k]++; if ($1 == "") c[k]++; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
      END { for (i = 1; i <= m; i++) printf "#   %-50s %d/%d\n", order[i], c[order[i]], n[order[i]] }'
fi
tail -n 1 "$log" | grep -q ' 0 failed$'
