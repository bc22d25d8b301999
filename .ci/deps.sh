#!/bin/sh
# Installs from Debian's archive what lmpio needs and the machine lacks.
set -e
need=""
command -v mpicc >/dev/null 2>&1 || need="$need openmpi-bin libopenmpi-dev"
command -v lua5.4 >/dev/null 2>&1 || need="$need lua5.4"
[ -f /usr/include/lua5.4/lua.h ] || need="$need liblua5.4-dev"
command -v busted >/dev/null 2>&1 || need="$need lua-busted"
command -v luarocks >/dev/null 2>&1 || need="$need luarocks"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v make >/dev/null 2>&1 || need="$need make"
command -v gcc >/dev/null 2>&1 || need="$need gcc"
# The reference documentation (make doc, the doc suite of make check): LDoc
# runs on Lua 5.1 (lua-any), with lua-markdown for the comments.
command -v ldoc >/dev/null 2>&1 || need="$need lua-ldoc"
command -v lua5.1 >/dev/null 2>&1 || need="$need lua5.1"
[ -f /usr/share/lua/5.1/markdown.lua ] || need="$need lua-markdown"
# The dropin suite: a Fortran program and an mpi4py script on lmpio.
command -v gfortran >/dev/null 2>&1 || need="$need gfortran"
[ -d /usr/lib/python3/dist-packages/mpi4py ] || need="$need python3-mpi4py"
# and a PnetCDF program (Debian's PnetCDF is built against Open MPI).
[ -f /usr/include/pnetcdf.h ] || need="$need libpnetcdf-dev"
# The .npy spec and the command's .npy tests check files with numpy
# (Debian's python3, /usr/bin/python3).
/usr/bin/python3 -c "import numpy" >/dev/null 2>&1 || need="$need python3-numpy"
# make lint (part of make check): cppcheck.
command -v cppcheck >/dev/null 2>&1 || need="$need cppcheck"
# make check-mpich (sh .ci/deps.sh mpich): MPICH 4.0 beside Open MPI, which
# stays the default (Debian's alternatives rank Open MPI first).
if [ "$1" = mpich ]; then
  command -v mpicc.mpich >/dev/null 2>&1 || need="$need mpich libmpich-dev"
fi
if [ -n "$need" ]; then
  echo "deps: installing$need"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q $need
fi
