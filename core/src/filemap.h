/* Small contiguous accesses through a mapping of the whole file (filemap.c):
 * one per handle, shared by its plans, safe to use from several threads. */
#ifndef LMPIO_FILEMAP_H
#define LMPIO_FILEMAP_H

typedef struct lmpio__filemap lmpio__filemap;


/* For the file open on fd (a local file system's, readable; writable: opened
 * for writing too; in_memory: on tmpfs or ramfs).  NULL when out of memory:
 * the functions below then do nothing. */
lmpio__filemap *lmpio__filemap_new(int fd, int writable, int in_memory);
void lmpio__filemap_free(lmpio__filemap *m);
/* The file may have changed size under the mapping (set_size, preallocate,
 * sync): the next access maps it again. */
void lmpio__filemap_forget(lmpio__filemap *m);
/* Moves len bytes between mem and the file at off through the mapping, in
 * direction dir (LMPIO__READ or LMPIO__WRITE; mode: the hint lmpio_map_reads
 * or lmpio_map_writes): 1 when done, 0 when the caller must make the system
 * call (too large, past the bytes known to be in the file, or not accessed
 * often enough lately for the mapping to pay). */
int lmpio__filemap_copy(lmpio__filemap *m, int dir, int mode, void *mem, MPI_Offset len, MPI_Offset off);
/* For a window of a large strided access, through the same mapping: the
 * address of file byte lo, bytes [lo, hi) being in the file (size: its size
 * as the caller just saw it).  The mapping is then held, unchanged, until
 * lmpio__filemap_release (ok: the copy raised no SIGBUS), which must follow
 * on the same thread.  NULL, with nothing held, when the window must go
 * another way. */
char *lmpio__filemap_hold(lmpio__filemap *m, int dir, MPI_Offset lo, MPI_Offset hi, MPI_Offset size);
void lmpio__filemap_release(lmpio__filemap *m, int dir, int ok);
/* Whether lmpio__filemap_hold may serve windows of a file of size bytes
 * (the mapping can be made, and the file is not too large for it). */
int lmpio__filemap_serves(lmpio__filemap *m, MPI_Offset size);
/* Sets the file's modification time to now if the mapping was written since
 * the last stamp (sync and close). */
void lmpio__filemap_stamp(lmpio__filemap *m);
/* A system call of this rank found the file at least end bytes long. */
void lmpio__filemap_saw(lmpio__filemap *m, MPI_Offset end);
/* Before a pwrite of the file: the size the mapping has seen (*gen: a
 * token for lmpio__filemap_wrote).  After the pwrite returned, ending at
 * end: lmpio__filemap_saw's, and the larger of seen and end is settled: a
 * disk file system's stores through the mapping may go below it (filemap.c
 * says why). */
MPI_Offset lmpio__filemap_seen(lmpio__filemap *m, unsigned *gen);
void lmpio__filemap_wrote(lmpio__filemap *m, unsigned gen, MPI_Offset seen, MPI_Offset end);
/* Whether stores into bytes below end are safe from extending writes in
 * flight: always on tmpfs, else below what is settled. */
int lmpio__filemap_may_store(lmpio__filemap *m, MPI_Offset end);

#endif
