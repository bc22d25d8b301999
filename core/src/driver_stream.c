/* The stream driver: pipes, FIFOs, sockets, terminals and the standard
 * streams, which have no file offsets.  Only rank 0 holds a descriptor; the
 * other ranks' bytes go through it (stream.c), in rank order for the
 * ordered collectives and whole records for write_shared.  So the view must
 * be the data as it is in memory (native, no holes), there is no size, and
 * nothing runs in the background (bytes leave in program order). */
#include "internal.h"

#include <errno.h>

static int stream_check_view(lmpio_file fh, const lmpio__view *v, const char *call) {
  if (v->rep)
    return lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call,
                      "file \"%s\" is a stream: its data representation can only be \"native\", not \"%s\"", fh->path,
                      v->datarep);
  if (!v->contiguous && !v->empty)
    return lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call,
                      "file \"%s\" is a stream: a filetype with holes has no meaning there", fh->path);
  return MPI_SUCCESS;
}

/* Bytes are written as they come: nothing to sync. */
static int stream_sync(int fd) {
  (void)fd;
  return 0;
}

static int no_lock(int fd, int write, MPI_Offset off, MPI_Offset len) {
  (void)fd, (void)write, (void)off, (void)len;
  errno = ESPIPE;
  return -1;
}

static int no_unlock(int fd, int wrote, MPI_Offset off, MPI_Offset len) {
  (void)fd, (void)wrote, (void)off, (void)len;
  return 0;
}

static long long no_pread(int fd, void *buf, MPI_Offset len, MPI_Offset off) {
  (void)fd, (void)buf, (void)len, (void)off;
  errno = ESPIPE;
  return -1;
}

static int no_size(int fd, MPI_Offset *size) {
  (void)fd, (void)size;
  errno = ESPIPE;
  return -1;
}

const lmpio__driver lmpio__driver_stream = {
    .name = "stream",
    .id = LMPIO__FS_STREAM,
    .lock = no_lock,
    .unlock = no_unlock,
    .pread = no_pread,
    .size = no_size,
    .sync = stream_sync,
    .map_pointer = 0,
    .shared = lmpio__pipe_shared,
    .ordered = lmpio__pipe_ordered,
    .check_view = stream_check_view,
    .no_size = "a stream (a pipe, FIFO, socket, terminal or standard stream): it has no size",
    .background = 0,
    .has_helper = 0,
};
