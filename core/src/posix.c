/* pread/pwrite loops and byte-range locks: the one place where storage
 * errors are born.  EINTR and short transfers are retried here, so no caller
 * ever sees them. */
#include "internal.h"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

long long lmpio__posix_pread_all(int fd, void *buf, size_t len, MPI_Offset off) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + (MPI_Offset)done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break; /* end of file */
    done += (size_t)n;
  }
  return (long long)done;
}

long long lmpio__posix_pwrite_all(int fd, const void *buf, size_t len, MPI_Offset off) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + (MPI_Offset)done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) { /* no progress and no error: report it rather than spin */
      errno = EIO;
      return -1;
    }
    done += (size_t)n;
  }
  return (long long)done;
}

static int setlk(int fd, short type, MPI_Offset off, MPI_Offset len) {
  struct flock fl;
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)off;
  fl.l_len = (off_t)len;
  fl.l_pid = 0;
#ifdef F_OFD_SETLKW
  /* Open-file-description locks belong to this descriptor, not to the whole
   * process: closing another descriptor of the same file keeps them, and
   * threads exclude each other. */
  for (;;) {
    if (fcntl(fd, F_OFD_SETLKW, &fl) == 0) return 0;
    if (errno == EINTR) continue;
    if (errno != EINVAL) return -1;
    break; /* kernel or file system without OFD locks */
  }
#endif
  while (fcntl(fd, F_SETLKW, &fl) < 0) {
    if (errno != EINTR) return -1;
  }
  return 0;
}

int lmpio__posix_lock(int fd, int write, MPI_Offset off, MPI_Offset len) {
  if (len <= 0) return 0;
  return setlk(fd, write ? F_WRLCK : F_RDLCK, off, len);
}

int lmpio__posix_unlock(int fd, MPI_Offset off, MPI_Offset len) {
  if (len <= 0) return 0;
  return setlk(fd, F_UNLCK, off, len);
}

int lmpio__posix_in_memory(int fd) {
  struct statfs sf;
  if (fstatfs(fd, &sf) != 0) return 0;
  return sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC;
}
