#!/bin/sh
# The cluster suite (make check-cluster; make check runs it where the machine
# allows): builds the simulated two-node cluster of cluster.sh once, then,
# RUNS times over (the failures it looks for are races):
#   - the multi-node checks (multinode.c) in every client profile, 2 nodes x
#     2 ranks, through each MPI-IO of IMPLS, judged on the ranks and on the
#     brick; on the `default` profile a check whose calls returned an error
#     passes (a library may refuse what it cannot do there), wrong bytes never;
#   - the same on one node, 4 ranks, on the direct-I/O mount (coherent);
#   - lmpio's C suites that concern more than one machine (SUITES), with
#     their files on the volume, in the coherent and nocache profiles.
# Environment: RUNS (2), PROFILES (coherent nocache default), IMPLS (lmpio;
# also ompio, romio: Open MPI's own, through the same binary), SUITES (the C
# tests), TABLE=1 prints a table of clean runs per check at the end.
# Output: "ok"/"not ok" lines labelled [impl profile #run], then "N passed, N failed".
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
RUNS=${RUNS:-2}
PROFILES=${PROFILES:-coherent nocache default}
IMPLS=${IMPLS:-lmpio}
SUITES=${SUITES-shared_test shfp_test collective_test model_test access_test file_test async_test}
CLUSTER_LIB=1
. "$(dirname "$0")/cluster.sh"

why=$(cl_why_not)
[ -z "$why" ] && ! cl_deps && why="glusterfs is not installed and apt-get could not install it"
if [ -n "$why" ]; then
  echo "skip cluster: $why"
  exit 0
fi
log=$(mktemp)
trap 'cl_down; rm -f "$log"' EXIT
trap 'exit 130' INT TERM HUP
start=$(date +%s)
# shellcheck disable=SC2086
if ! cl_up $PROFILES; then
  echo "not ok cluster: could not be built"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "# cluster built in $(($(date +%s) - start)) s: $CL_DIR"

# impl_args IMPL: what mpirun needs to run multinode on that MPI-IO.
impl_args() {
  case $1 in
  lmpio) echo "-x LD_PRELOAD=$BUILD/lib/liblmpio-mpi.so -x MULTINODE_EXPECT_LMPIO=1" ;;
  ompio) echo "--mca io ompio" ;;
  romio) echo "--mca io romio321" ;;
  esac
}

judge="$BUILD/cluster/multinode --verify @BRICK@"
r=1
{
  while [ "$r" -le "$RUNS" ]; do
    for p in $PROFILES; do
      refusal=0
      [ "$p" = default ] && refusal=1
      for impl in $IMPLS; do
        # shellcheck disable=SC2046
        cl_run "$impl $p #$r" "$p" 300 "$judge" $(impl_args "$impl") -x MULTINODE_NODES=2 \
          -x MULTINODE_REFUSAL_OK=$refusal "$BUILD/cluster/multinode" @DIR@
      done
      if [ "$p" = coherent ]; then
        for impl in $IMPLS; do
          # shellcheck disable=SC2046
          CL_HOSTS=node1:4
          cl_run "$impl one-node $p #$r" "$p" 300 "$judge" $(impl_args "$impl") -x MULTINODE_NODES=1 \
            "$BUILD/cluster/multinode" @DIR@
          CL_HOSTS=
        done
      fi
      case " $IMPLS " in *" lmpio "*) ;; *) continue ;; esac
      [ "$p" = default ] && continue
      for t in $SUITES; do
        [ -x "$BUILD/test/$t" ] || continue
        s=$(date +%s)
        cl_run "$t $p #$r" "$p" 300 "" --mca io romio321 "$BUILD/test/$t"
        echo "# $t $p: $(($(date +%s) - s)) s"
      done
    done
    r=$((r + 1))
  done
  echo "# cluster suite: $(($(date +%s) - start)) s"
  echo "$CL_PASSED passed, $CL_FAILED failed"
} | tee "$log"
if [ "${TABLE:-}" = 1 ]; then
  echo "# clean runs / runs, per check:"
  sed -n 's/^\(not \)\{0,1\}ok \[\([^]]*\) #[0-9]*\] \(.*\)$/\1|\2|\3/p' "$log" | sed 's/ (.*$//; s/ # .*$//' |
    awk -F'|' '{ k = $2 " | " $3; n[k]++; if ($1 == "") c[k]++; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
      END { for (i = 1; i <= m; i++) printf "#   %-50s %d/%d\n", order[i], c[order[i]], n[order[i]] }'
fi
tail -n 1 "$log" | grep -q ' 0 failed$'
