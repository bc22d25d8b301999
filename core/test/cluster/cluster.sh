#!/bin/sh
# A simulated cluster of two (or N) nodes on one Linux machine, to run MPI-IO
# programs with ranks on several "machines" that share a network file system.
#
# Usage (as root; Debian's glusterfs-server is installed when missing):
#
#   sh core/test/cluster/cluster.sh [--profile P]... [--runs N] [--timeout S]
#       [--judge 'COMMAND... @BRICK@'] [--nodes N] [--hosts node1:2,node2:2]
#       -- MPIRUN-ARGS... PROGRAM ARGS...
#
# runs `mpirun --host node1:2,node2:2 MPIRUN-ARGS... PROGRAM ARGS...` from
# node1 (--nodes N: N nodes, by default 2 ranks on each; CL_NODES says the
# same), N times in each profile P (coherent, nocache, default; all three by
# default), in each run with the volume emptied first.  @DIR@ in the
# arguments is the profile's mount point (the same path on both nodes, also
# passed as LMPIO_TEST_DIR), @BRICK@ the server's brick directory of it.  The
# judge runs after each run on this machine (it reads the brick, the bytes as
# the server holds them).  Every line "ok NAME" / "not ok NAME" of the
# program and the judge is printed with the run's label, and the last line
# is "N passed, N failed".  For example, the multi-node checks through the
# drop-in library, three times on NFS-like clients:
#
#   sh core/test/cluster/cluster.sh --profile nocache --runs 3 \
#     --judge 'build/cluster/multinode --verify @BRICK@' -- \
#     -x LD_PRELOAD=$PWD/build/lib/liblmpio-mpi.so build/cluster/multinode @DIR@
#
# or one C test: ... -- build/test/shared_test   (its files go to @DIR@).
# Each node has its own /dev/shm; /tmp is the host's (a clone of the project
# under /tmp, as CI may make, must run there).
#
# The cluster: three network namespaces (gserver, node1, node2, and node3...
# with more nodes), each with its own host name and mount namespace (private
# /dev/shm, its own /etc/hosts and boot id), joined by a bridge inside gserver's namespace on
# the private subnet 10.218.18.0/24, which exists only inside them (nothing
# is added to this machine's own network).  gserver runs glusterd, with its
# state in the cluster's directory, and one single-brick volume per profile;
# each node mounts every volume with a FUSE client of its own:
#   coherent  client caches off: GlusterFS's performance translators off,
#             direct I/O, no attribute or entry cache (as Lustre, GPFS, BeeGFS)
#   nocache   performance translators off, the kernel's page and attribute
#             caches on (close-to-open, as NFS)
#   default   GlusterFS's defaults (its own client caches on)
# Byte-range locks are granted by the server.  Open MPI sees two (N) machines
# (its rsh launcher starts orted on node2... through nsenter: $CL_DIR/agent).
# Everything is removed at the end, also on failure or interrupt: the
# mounts, every process in the namespaces (by PID), the namespaces (with
# their links and bridge), the directory.
#
# Sourced with CLUSTER_LIB=1, it only defines the functions (suite.sh).

CL_NET=10.218.18
CL_PROFILES_ALL="coherent nocache default"
CL_DIR=""
CL_NODES=${CL_NODES:-2}
CL_PASSED=0
CL_FAILED=0

# Why the cluster cannot be built here (nothing when it can).
cl_why_not() {
  [ "$(id -u)" = 0 ] || { echo "not root"; return; }
  [ -c /dev/fuse ] || { echo "no /dev/fuse"; return; }
  if ! command -v unshare >/dev/null 2>&1 || ! command -v nsenter >/dev/null 2>&1; then echo "no unshare/nsenter"; return; fi
  command -v ip >/dev/null 2>&1 || { echo "no ip (iproute2)"; return; }
  ip netns list >/dev/null 2>&1 || { echo "ip netns does not work"; return; }
  unshare -n -m -u true 2>/dev/null || { echo "cannot make network namespaces (unshare -n)"; return; }
  if ! mpirun --version 2>/dev/null | grep -q "Open MPI"; then echo "no mpirun of Open MPI"; fi
}

# Installs what is missing (cheap when everything is there).
cl_deps() {
  cl_need=""
  command -v glusterd >/dev/null 2>&1 && command -v gluster >/dev/null 2>&1 || cl_need="$cl_need glusterfs-server"
  command -v glusterfs >/dev/null 2>&1 || cl_need="$cl_need glusterfs-client"
  command -v ip >/dev/null 2>&1 || cl_need="$cl_need iproute2"
  [ -z "$cl_need" ] && return 0
  echo "# cluster: installing$cl_need" >&2
  # shellcheck disable=SC2086
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $cl_need; } >&2
}

# The nodes' names: node1 ... node$CL_NODES.
cl_nodes() {
  cl_k=1
  while [ "$cl_k" -le "$CL_NODES" ]; do
    echo "node$cl_k"
    cl_k=$((cl_k + 1))
  done
}

# The nodes that cl_up made (their holders' PID files): what to tear down,
# whatever CL_NODES says by then.
cl_made() {
  for cl_f in "$CL_DIR"/node*.pid; do
    [ -f "$cl_f" ] && basename "$cl_f" .pid
  done
}

# mpirun's --host: 2 ranks on every node.
cl_hosts() {
  cl_nodes | sed 's/$/:2/' | paste -s -d, -
}

# cl_in NAME COMMAND...: runs COMMAND in the namespaces of gserver or a node.
cl_in() {
  cl_t=$(cat "$CL_DIR/$1.pid"); shift
  nsenter -t "$cl_t" -n -m -u --wd="$PWD" -- "$@"
}

# Starts the process that holds a machine's namespaces (in a session of its
# own: a signal to the caller's process group must not end it before the
# teardown), and notes the network namespace it holds.
cl_holder() {
  setsid unshare -n -u -m --propagation private sleep infinity </dev/null >/dev/null 2>&1 &
  echo $! > "$CL_DIR/$1.pid"
  cl_i=0
  # (setsid and unshare exec sleep once the namespaces exist)
  while [ "$(readlink /proc/$!/ns/net)" = "$(readlink /proc/self/ns/net)" ] ||
        [ "$(cat /proc/$!/comm 2>/dev/null)" != sleep ]; do
    cl_i=$((cl_i + 1)); [ $cl_i -lt 100 ] || return 1
    sleep 0.05
  done
  readlink "/proc/$!/ns/net" > "$CL_DIR/$1.ns"
}

# Every PID (but the holder's) in the network namespace of NAME, found by
# the namespace (also once its holder is gone).
cl_pids_in() {
  cl_h=$(cat "$CL_DIR/$1.pid" 2>/dev/null)
  cl_ns=$(cat "$CL_DIR/$1.ns" 2>/dev/null) || return 0
  [ -n "$cl_ns" ] || return 0
  # (one ls, not a readlink per process: under load those forks took seconds)
  # shellcheck disable=SC2012 # (ls -l of symbolic links under /proc: names are numbers)
  ls -l /proc/[0-9]*/ns/net 2>/dev/null |
    awk -v ns="$cl_ns" -v h="$cl_h" '$NF == ns { split($(NF - 2), f, "/"); if (f[3] != h) print f[3] }'
}

# cl_wait_gone PID...: up to 5 s, then SIGKILL.
cl_wait_gone() {
  cl_i=0
  while [ $cl_i -lt 50 ]; do
    cl_alive=""
    for cl_p in "$@"; do kill -0 "$cl_p" 2>/dev/null && cl_alive="$cl_alive $cl_p"; done
    [ -z "$cl_alive" ] && return 0
    cl_i=$((cl_i + 1))
    sleep 0.1
  done
  # shellcheck disable=SC2086
  kill -9 $cl_alive 2>/dev/null
}

cl_up() {
  cl_profiles=${*:-$CL_PROFILES_ALL}
  [ -n "$CL_DIR" ] || CL_DIR=$(mktemp -d /var/tmp/lmpio-cluster.XXXXXX) || return 1
  chmod 755 "$CL_DIR"
  case $CL_NODES in
  [1-9] | [1-9][0-9]) ;;
  *) echo "# cluster: CL_NODES=$CL_NODES: from 1 to 99 nodes" >&2; return 1 ;;
  esac
  mkdir -p "$CL_DIR/gserver/lib" "$CL_DIR/gserver/log" "$CL_DIR/gserver/run"
  for cl_m in $(cl_nodes); do mkdir -p "$CL_DIR/$cl_m/log"; done
  cp -r /var/lib/glusterd/groups "$CL_DIR/gserver/lib/" 2>/dev/null
  # node K at .(10+K)
  { printf '127.0.0.1 localhost\n%s.1 gserver\n' $CL_NET
    cl_nodes | awk -v net=$CL_NET '{ printf "%s.%d %s\n", net, 10 + NR, $0 }'; } > "$CL_DIR/hosts"
  cl_id=$(($$ % 100000))
  for cl_m in gserver $(cl_nodes); do cl_holder "$cl_m" || { echo "# cluster: cannot start $cl_m" >&2; return 1; }; done

  # gserver: the bridge, glusterd with its state in $CL_DIR/gserver.
  cl_in gserver sh -c "hostname gserver &&
    mount --bind '$CL_DIR/gserver/lib' /var/lib/glusterd && mount --bind '$CL_DIR/gserver/log' /var/log/glusterfs &&
    mount --bind '$CL_DIR/gserver/run' /run && mount --bind '$CL_DIR/hosts' /etc/hosts &&
    ip link set lo up && ip link add br0 type bridge && ip addr add $CL_NET.1/24 dev br0 && ip link set br0 up" || return 1
  cl_n=11
  for cl_m in $(cl_nodes); do
    cat /proc/sys/kernel/random/uuid > "$CL_DIR/$cl_m/boot_id"
    ip link add "lmc${cl_id}$cl_m" type veth peer name "lmc${cl_id}s$cl_n" netns "$(cat "$CL_DIR/gserver.pid")" &&
      ip link set "lmc${cl_id}$cl_m" netns "$(cat "$CL_DIR/$cl_m.pid")" &&
      cl_in gserver sh -c "ip link set lmc${cl_id}s$cl_n master br0 && ip link set lmc${cl_id}s$cl_n up" &&
      cl_in "$cl_m" sh -c "hostname $cl_m && mount -t tmpfs tmpfs /dev/shm &&
        mount --bind '$CL_DIR/hosts' /etc/hosts && mount --bind '$CL_DIR/$cl_m/boot_id' /proc/sys/kernel/random/boot_id &&
        mount --bind '$CL_DIR/$cl_m/log' /var/log/glusterfs &&
        ip link set lo up && ip link set lmc${cl_id}$cl_m name eth0 && ip addr add $CL_NET.$cl_n/24 dev eth0 && ip link set eth0 up" ||
      return 1
    cl_n=$((cl_n + 1))
  done

  cl_in gserver glusterd -p /run/glusterd.pid || return 1
  cl_i=0
  until cl_in gserver gluster --mode=script pool list >/dev/null 2>&1; do
    cl_i=$((cl_i + 1)); [ $cl_i -lt 300 ] || { echo "# cluster: glusterd does not answer" >&2; return 1; }
    sleep 0.1
  done
  # The client caches off, in one command per volume (a group of options).
  mkdir -p "$CL_DIR/gserver/lib/groups"
  for cl_o in write-behind read-ahead io-cache quick-read stat-prefetch open-behind readdir-ahead nl-cache; do
    echo "performance.$cl_o=off"
  done > "$CL_DIR/gserver/lib/groups/lmpio-nocache"
  for cl_p in $cl_profiles; do
    mkdir -p "$CL_DIR/brick/$cl_p" "$CL_DIR/mnt/$cl_p"
    cl_in gserver gluster --mode=script volume create "lmpio-$cl_p" "$CL_NET.1:$CL_DIR/brick/$cl_p" force >/dev/null || return 1
    case $cl_p in
    coherent | nocache)
      cl_in gserver gluster --mode=script volume set "lmpio-$cl_p" group lmpio-nocache >/dev/null || return 1 ;;
    default) ;;
    *) echo "# cluster: no profile $cl_p" >&2; return 1 ;;
    esac
    cl_in gserver gluster --mode=script volume start "lmpio-$cl_p" >/dev/null || return 1
  done

  # Each node mounts each volume with its own client.
  for cl_m in $(cl_nodes); do
    for cl_p in $cl_profiles; do
      case $cl_p in
      coherent) cl_o="--direct-io-mode=enable --attribute-timeout=0 --entry-timeout=0 --negative-timeout=0" ;;
      nocache) cl_o="--direct-io-mode=disable" ;;
      default) cl_o="" ;;
      esac
      # shellcheck disable=SC2086
      cl_in $cl_m glusterfs --process-name fuse --volfile-server=gserver --volfile-id="lmpio-$cl_p" \
        -p "$CL_DIR/$cl_m/$cl_p.pid" -l "$CL_DIR/$cl_m/$cl_p.log" $cl_o "$CL_DIR/mnt/$cl_p" || return 1
      cl_i=0
      until cl_in "$cl_m" mountpoint -q "$CL_DIR/mnt/$cl_p"; do
        cl_i=$((cl_i + 1)); [ $cl_i -lt 300 ] || { echo "# cluster: $cl_m cannot mount lmpio-$cl_p" >&2; return 1; }
        sleep 0.1
      done
    done
  done

  # Open MPI's rsh launcher reaches node2... (and node1) through this.
  { cat <<EOF
#!/bin/sh
# plm_rsh_agent of the simulated cluster: HOST COMMAND... runs COMMAND in HOST's namespaces.
case \$1 in
EOF
    for cl_m in $(cl_nodes); do echo "$cl_m) t=$(cat "$CL_DIR/$cl_m.pid") ;;"; done
    cat <<EOF
*) echo "\$0: no host \$1" >&2; exit 255 ;;
esac
shift
exec nsenter -t \$t -n -m -u -- /bin/sh -c "\$*"
EOF
  } > "$CL_DIR/agent"
  chmod 755 "$CL_DIR/agent"
}

# Kills whatever runs in the nodes' namespaces but the file-system clients.
cl_reap() {
  cl_keep=" $(for cl_m in $(cl_made); do cat "$CL_DIR/$cl_m"/*.pid 2>/dev/null; done | tr '\n' ' ') "
  cl_stray=""
  for cl_m in $(cl_made); do
    for cl_p in $(cl_pids_in "$cl_m"); do
      case $cl_keep in *" $cl_p "*) ;; *) cl_stray="$cl_stray $cl_p" ;; esac
    done
  done
  [ -z "$cl_stray" ] && return 0
  # shellcheck disable=SC2086
  kill $cl_stray 2>/dev/null
  # shellcheck disable=SC2086
  cl_wait_gone $cl_stray
}

cl_down() {
  [ -n "$CL_DIR" ] && [ -d "$CL_DIR" ] || return 0
  for cl_m in $(cl_made); do
    [ -f "$CL_DIR/$cl_m.pid" ] || continue
    for cl_mp in "$CL_DIR"/mnt/*; do
      [ -d "$cl_mp" ] && cl_in "$cl_m" sh -c "mountpoint -q '$cl_mp' && umount '$cl_mp' || { mountpoint -q '$cl_mp' && umount -l '$cl_mp'; }" 2>/dev/null
    done
  done
  # Everything in the namespaces, by PID: clients, bricks, glusterd, strays.
  cl_all=""
  for cl_m in $(cl_made) gserver; do cl_all="$cl_all $(cl_pids_in "$cl_m" | tr '\n' ' ')"; done
  if [ -n "${cl_all# }" ]; then
    # shellcheck disable=SC2086
    kill $cl_all 2>/dev/null
    # shellcheck disable=SC2086
    cl_wait_gone $cl_all
  fi
  cl_holders=""
  for cl_m in $(cl_made) gserver; do
    [ -f "$CL_DIR/$cl_m.pid" ] && cl_holders="$cl_holders $(cat "$CL_DIR/$cl_m.pid")"
  done
  if [ -n "$cl_holders" ]; then
    # shellcheck disable=SC2086
    kill $cl_holders 2>/dev/null
    # shellcheck disable=SC2086
    cl_wait_gone $cl_holders
  fi
  rm -rf "$CL_DIR"
  CL_DIR=""
}

# cl_subst WORD: @DIR@ and @BRICK@ of the current profile.
cl_subst() {
  printf '%s' "$1" | sed "s|@DIR@|$CL_DIR/mnt/$cl_prof|g; s|@BRICK@|$CL_DIR/brick/$cl_prof|g"
}

# cl_count LABEL FILE: prints FILE's result lines with the label, counts them.
cl_count() {
  sed -n -e "s/^ok /ok [$1] /p" -e "s/^not ok /not ok [$1] /p" -e "/^# /p" "$2"
  cl_p=$(grep -c '^ok ' "$2")
  cl_f=$(grep -c '^not ok ' "$2")
  CL_PASSED=$((CL_PASSED + cl_p))
  CL_FAILED=$((CL_FAILED + cl_f))
}

# cl_run LABEL PROFILE TIMEOUT JUDGE MPIRUN-ARGS...: one run (JUDGE may be "").
cl_run() {
  cl_label=$1 cl_prof=$2 cl_timeout=$3 cl_judge=$4
  shift 4
  cl_mp=$CL_DIR/mnt/$cl_prof
  # A fresh volume: what the last run left is removed through node1.
  cl_in node1 find "$cl_mp" -mindepth 1 -delete 2>/dev/null
  cl_n=$#
  while [ "$cl_n" -gt 0 ]; do
    cl_a=$1; shift
    case $cl_a in *@DIR@* | *@BRICK@*) cl_a=$(cl_subst "$cl_a") ;; esac
    set -- "$@" "$cl_a"
    cl_n=$((cl_n - 1))
  done
  cl_out=$CL_DIR/out
  cl_in node1 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout -k 10 "$cl_timeout" mpirun --host "${CL_HOSTS:-$(cl_hosts)}" --bind-to none \
    --mca plm_rsh_agent "$CL_DIR/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include $CL_NET.0/24 --mca btl_tcp_if_include $CL_NET.0/24 \
    -x LMPIO_TEST_DIR="$cl_mp" "$@" </dev/null >"$cl_out" 2>&1
  cl_rc=$?
  cl_reap
  cl_f0=$CL_FAILED
  cl_count "$cl_label" "$cl_out"
  if [ "$cl_rc" -eq 124 ] || [ "$cl_rc" -eq 137 ]; then
    echo "not ok [$cl_label] (timed out after $cl_timeout s)"
    CL_FAILED=$((CL_FAILED + 1))
  elif [ "$cl_rc" -ne 0 ] && ! grep -q '^not ok ' "$cl_out"; then
    echo "not ok [$cl_label] (exit status $cl_rc)"
    CL_FAILED=$((CL_FAILED + 1))
  fi
  if [ -n "$cl_judge" ]; then
    cl_j=$(cl_subst "$cl_judge")
    sh -c "$cl_j" >"$cl_out.judge" 2>&1
    cl_jrc=$?
    cl_count "$cl_label" "$cl_out.judge"
    if [ "$cl_jrc" -ne 0 ] && ! grep -q '^not ok ' "$cl_out.judge"; then
      echo "not ok [$cl_label] judge (exit status $cl_jrc)"
      CL_FAILED=$((CL_FAILED + 1))
    fi
    cat "$cl_out.judge" >> "$cl_out"
  fi
  # What else the programs said, when something failed.
  [ "$CL_FAILED" -gt "$cl_f0" ] && grep -v -e '^ok ' -e '^not ok ' -e '^# ' "$cl_out" | tail -n 30 | sed 's/^/    /'
  return 0
}

[ "${CLUSTER_LIB:-}" = 1 ] && return 0

# ---- the command ------------------------------------------------------------
profiles="" runs=1 timeout=300 judge=""
while [ $# -gt 0 ]; do
  case $1 in
  --profile) [ "$2" = all ] && profiles=$CL_PROFILES_ALL || profiles="$profiles $2"; shift 2 ;;
  --runs) runs=$2; shift 2 ;;
  --timeout) timeout=$2; shift 2 ;;
  --judge) judge=$2; shift 2 ;;
  --hosts) CL_HOSTS=$2; shift 2 ;;
  --nodes) CL_NODES=$2; shift 2 ;;
  --) shift; break ;;
  -h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "cluster.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "cluster.sh: no program (see --help)" >&2; exit 2; }
profiles=${profiles:-$CL_PROFILES_ALL}
why=$(cl_why_not)
[ -z "$why" ] && ! cl_deps && why="glusterfs is not installed and apt-get could not install it"
if [ -n "$why" ]; then
  echo "skip cluster: $why"
  exit 77
fi
trap 'cl_down' EXIT
trap 'exit 130' INT TERM HUP
# shellcheck disable=SC2086
cl_up $profiles || { echo "not ok cluster: could not be built"; echo "0 passed, 1 failed"; exit 1; }
r=1
while [ "$r" -le "$runs" ]; do
  for p in $profiles; do
    cl_run "$p #$r" "$p" "$timeout" "$judge" "$@"
  done
  r=$((r + 1))
done
echo "$CL_PASSED passed, $CL_FAILED failed"
[ "$CL_FAILED" -eq 0 ]
