/* The local driver: one kernel serves every rank (ext4, xfs, btrfs, tmpfs...),
 * so its page cache is the file: byte-range locks are all that
 * read-modify-write needs, and sync is fsync. */
#include "internal.h"

const lmpio__driver lmpio__driver_local = {
    .name = "local",
    .id = LMPIO__FS_LOCAL,
    .lock = lmpio__os_lock,
    .unlock = lmpio__driver_unlock_plain,
    .pread = lmpio__os_pread_all,
    .size = lmpio__os_size,
    .sync = lmpio__os_fsync,
    .block = lmpio__os_block_size,
    .map_pointer = 1,
    .sieve_writes = 1,
    .map_reads = 1,
    .map_writes = 1,
    .background = 1,
    .has_helper = 1,
};
