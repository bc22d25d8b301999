#!/bin/sh
# One rank of spec/mpi_busted.sh: busted's TAP output into DIR/rank<N>.tap.
dir=$1
shift
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-0}}}
exec busted --lua="${LUA:-lua5.4}" -o TAP "$@" >"$dir/rank$r.tap" 2>&1
