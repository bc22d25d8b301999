# shellcheck shell=sh disable=SC2034
# Sourced by the shell checks of the module (spec/command_test.sh,
# spec/hang_test.sh), from the top of the tree, with NAME set: what they
# share.  The settings of check.sh or their defaults (BUILD made absolute,
# MPIRUN, LUA, T: seconds one run may take), root allowed to run Open MPI,
# Lua finding the module of BUILD, and $dir, a fresh directory
# (lmpio-NAME.XXXXXX) removed at exit.  (SC2034: what it sets is for them.)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
MPIRUN=${MPIRUN:-mpirun}
LUA=${LUA:-lua5.4}
T=${LMPIO_SPEC_TIMEOUT:-120}
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export LUA_CPATH_5_4="$BUILD/lua/?.so;;"
dir=$(mktemp -d "${TMPDIR:-/tmp}/lmpio-$NAME.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
