/* external32: the standard's portable representation (big-endian, IEEE,
 * the sizes of the standard's table).  Used by datarep.c for "external32"
 * and "internal" (the same layout; see external32.c).  Native items may be
 * unaligned in memory; src and dst must not overlap.  Thread safe. */
#ifndef LMPIO_EXTERNAL32_H
#define LMPIO_EXTERNAL32_H

#include <mpi.h>

/* Size in bytes of predefined type t in external32 (complex types: both
 * parts), or 0 when t has no external32 form (derived types,
 * MPI_DATATYPE_NULL, unknown types) or no data (MPI_LB, MPI_UB). */
MPI_Aint lmpio__external32_size(MPI_Datatype t);

/* Converts n items of predefined type t from native form at src (items of
 * the type's native size, back to back) to external32 at dst
 * (n * lmpio__external32_size(t) bytes).  A value that does not fit its
 * external32 width returns MPI_ERR_CONVERSION with *bad set to the index of
 * the first such item (items before it are converted); a type without an
 * external32 form returns MPI_ERR_TYPE. */
int lmpio__external32_encode(MPI_Datatype t, const void *src, void *dst, MPI_Count n,
                             MPI_Count *bad);
/* The reverse: external32 at src to native at dst; a file value that does not
 * fit the native type returns MPI_ERR_CONVERSION with *bad as above. */
int lmpio__external32_decode(MPI_Datatype t, const void *src, void *dst, MPI_Count n,
                             MPI_Count *bad);

#endif
