/* The coherent driver: parallel file systems whose lock managers keep every
 * client's cache coherent with the others' (Lustre's LDLM, GPFS tokens,
 * BeeGFS, CephFS capabilities).  A client that takes a byte-range lock reads
 * what others wrote under theirs, and data written is visible to others once
 * the lock is released, so the operations are the plain POSIX ones, as on a
 * local file system.  The difference from local is elsewhere: ranks on
 * several machines (no mapped shared pointer across kernels: shared.c knows
 * that from the ranks' kernels, not from here) and stripes (collective.c
 * aligns file domains). */
#include "internal.h"

const lmpio__driver lmpio__driver_coherent = {
    .name = "coherent",
    .id = LMPIO__FS_COHERENT,
    .lock = lmpio__os_lock,
    .unlock = lmpio__driver_unlock_plain,
    .pread = lmpio__os_pread_all,
    .size = lmpio__os_size,
    .sync = lmpio__os_fsync,
    .block = lmpio__os_block_size,
    .map_pointer = 1,
    .sieve_writes = 1,
    .background = 1,
    .has_helper = 1,
};
