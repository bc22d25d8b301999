/* The ground floor: every system call of the core goes through one table of
 * function pointers (as SQLite's aSyscall[] does), so tests can replace an
 * entry and inject a failure anywhere.  The loops that retry EINTR and short
 * transfers, and the mapping of errno to an MPI error class, exist only in
 * os.c.  Nothing here is exported from the shared library. */
#ifndef LMPIO_OS_H
#define LMPIO_OS_H

#include <mpi.h>
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <sys/stat.h> /* statx */
#include <signal.h>

/* The system calls, with the signatures of their POSIX originals (fallocate:
 * posix_fallocate's, returning an errno value).  A replaced entry must
 * behave like the original: return -1 and set errno on failure. */
typedef struct {
  int (*open)(const char *path, int flags, mode_t mode);
  int (*close)(int fd);
  int (*fstat)(int fd, struct stat *st);
  int (*fstatfs)(int fd, struct statfs *st);
  int (*ftruncate)(int fd, off_t length);
  int (*fallocate)(int fd, off_t offset, off_t length);
  int (*fsync)(int fd);
  int (*unlink)(const char *path);
  ssize_t (*pread)(int fd, void *buf, size_t count, off_t offset);
  ssize_t (*pwrite)(int fd, const void *buf, size_t count, off_t offset);
  int (*fcntl_lock)(int fd, int cmd, struct flock *lock);
  void *(*mmap)(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
  int (*munmap)(void *addr, size_t length);
  DIR *(*opendir)(const char *path);
  struct dirent *(*readdir)(DIR *dir);
  int (*closedir)(DIR *dir);
  int (*sync_file_range)(int fd, off_t offset, off_t nbytes, unsigned int flags);
  /* streams (non-seekable files: pipes, FIFOs, terminals) */
  ssize_t (*read)(int fd, void *buf, size_t count);
  ssize_t (*write)(int fd, const void *buf, size_t count);
  int (*stat)(const char *path, struct stat *st);
  int (*dup)(int fd);
  /* file-system drivers (driver*.c): cache drops and sizes from the server */
  int (*fadvise)(int fd, off_t offset, off_t len, int advice); /* posix_fadvise's: returns an errno value */
  int (*statx)(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf);
  /* the SIGBUS guard of mapped reads */
  int (*sigaction)(int sig, const struct sigaction *act, struct sigaction *old);
  /* the modification time of files written through a mapping (filemap.c) */
  int (*futimens)(int fd, const struct timespec times[2]);
  /* a descriptor's access mode (fcntl F_GETFL: async.c's own descriptors) */
  int (*getfl)(int fd);
  /* a caching driver's pause between its tries (driver.c) */
  int (*nanosleep)(const struct timespec *req, struct timespec *rem);
  /* the machine's name (the shared pointer's helper file, pointer.c) */
  int (*gethostname)(char *name, size_t len);
} lmpio__os_table;

/* The entries by name, as SQLite's aSyscall[] has them: where each lies in
 * the table (tests replace and restore entries by name). */
typedef struct {
  const char *name;
  size_t offset;
} lmpio__os_entry;
extern const lmpio__os_entry lmpio__os_entries[];
extern const int lmpio__os_nentries;

extern lmpio__os_table lmpio__os;
/* The real system calls (tests restore the table from it). */
extern const lmpio__os_table lmpio__os_real;

/* Each returns 0 (or a descriptor, or bytes) on success and -1 with errno
 * set on failure; EINTR is retried, never returned. */
int lmpio__os_open(const char *path, int flags, mode_t mode);
int lmpio__os_close(int fd);
int lmpio__os_fstat(int fd, struct stat *st);
int lmpio__os_size(int fd, MPI_Offset *size);
int lmpio__os_ftruncate(int fd, MPI_Offset length);
int lmpio__os_fallocate(int fd, MPI_Offset offset, MPI_Offset length);
int lmpio__os_fsync(int fd);
/* Starts writing the file's dirty pages back (does not wait for them), so
 * that a later fsync has less to do; a hint: failures are ignored. */
void lmpio__os_writeback(int fd);
int lmpio__os_unlink(const char *path);
/* Sets fd's modification (and change) time to now; failures are ignored
 * (a courtesy to tools that compare times). */
void lmpio__os_touch(int fd);
void *lmpio__os_mmap(size_t length, int fd); /* shared read-write, offset 0; NULL on failure */
void lmpio__os_munmap(void *addr, size_t length);
/* A shared mapping of the file bytes [off, off + len), read-only or
 * writable, its pages mapped in at once; *at is where byte off lies in it.
 * NULL (nothing to undo) when the file cannot be mapped or the guard below
 * cannot be set up.  Undo with lmpio__os_munmap(map, *maplen). */
void *lmpio__os_map(int fd, MPI_Offset off, MPI_Offset len, int writable, char **at, size_t *maplen);
/* Runs fn(arg), turning a SIGBUS it raises (a mapped page the file no longer
 * has, or an I/O error reading one in) into a return of -1 with errno EIO;
 * 0 otherwise.  The handler is installed at the first mapping and passes
 * every other SIGBUS on to the handler that was there before. */
int lmpio__os_guarded(void (*fn)(void *), void *arg);
/* A shared mapping of the file's first len bytes (which may reach past its
 * end), read-only or read-write, with the SIGBUS guard installed; NULL when
 * it cannot be made.  Undone with lmpio__os_munmap. */
void *lmpio__os_map_file(int fd, size_t len, int writable);
/* Whether the SIGBUS guard is in place, put back if the program set a
 * handler over it since: before a long copy through a mapping made earlier. */
int lmpio__os_guard_ready(void);
/* Full transfers: short transfers and EINTR are retried; pread stops at end
 * of file.  Return the bytes moved, or -1 with errno set.  A range that
 * would end past the largest offset a file can have fails with EFBIG. */
long long lmpio__os_pread_all(int fd, void *buf, MPI_Offset len, MPI_Offset off);
long long lmpio__os_pwrite_all(int fd, const void *buf, MPI_Offset len, MPI_Offset off);
/* Byte-range locks (open-file-description locks where the kernel has them). */
int lmpio__os_lock(int fd, int write, MPI_Offset off, MPI_Offset len);
int lmpio__os_unlock(int fd, MPI_Offset off, MPI_Offset len);
/* An open-file-description lock of type (F_RDLCK, F_WRLCK, F_UNLCK),
 * without waiting: -1 with errno when another holds the bytes (EAGAIN,
 * EACCES) or the kernel has no OFD locks (EINVAL, ENOSYS). */
int lmpio__os_try_lock(int fd, short type, MPI_Offset off, MPI_Offset len);
/* Streams.  stat of a path; a close-on-exec duplicate of a descriptor (the
 * process's standard output or input). */
int lmpio__os_stat(const char *path, struct stat *st);
int lmpio__os_dup(int fd);
/* fd's access mode and status flags (fcntl F_GETFL), or -1. */
int lmpio__os_flags(int fd);
/* Sleeps ms milliseconds (EINTR ends it early). */
void lmpio__os_pause_ms(long ms);
/* The machine's name into name (n bytes, always terminated; "" when it
 * cannot be had). */
void lmpio__os_hostname(char *name, size_t n);
/* Whether a file of this mode is a stream: a FIFO, a socket or a character
 * device (no file offsets). */
int lmpio__os_is_stream(mode_t mode);
/* Reads up to len bytes from a stream, stopping only at end of input or when
 * len bytes came: returns the bytes read (short only at end of input). */
long long lmpio__os_read_all(int fd, void *buf, MPI_Offset len);
/* Writes len bytes to a stream.  A reader that has gone fails with EPIPE
 * (SIGPIPE is blocked in the calling thread around the write, and the one it
 * raised is consumed), never killing the process. */
long long lmpio__os_write_all(int fd, const void *buf, MPI_Offset len);

/* Drops this client's cached pages of [off, off + len) (whole pages; len 0:
 * to the end), writing dirty ones back first: the next read asks the
 * server.  Returns -1 with errno when the pages could not be dropped. */
int lmpio__os_drop_cache(int fd, MPI_Offset off, MPI_Offset len);
/* The size of fd's file, asked of the server (a network client's cached
 * attributes are not trusted). */
int lmpio__os_size_fresh(int fd, MPI_Offset *size);
/* fd's file system: its statfs magic number and, from the mount table, its
 * type name ("ext4", "nfs4", "fuse.glusterfs"; "" when not found). */
int lmpio__os_fs_type(int fd, long *magic, char *type, size_t n);

/* Whether fd's file lives in memory (tmpfs, ramfs): system calls are cheap
 * there, so moving small blocks one by one pays off sooner. */
int lmpio__os_in_memory(int fd);
/* The block size fd's file system reports (statfs f_bsize), or 0 when it
 * cannot be known. */
MPI_Offset lmpio__os_block_size(int fd);

/* The MPI error class of an errno value, and the detailed message of a
 * failed system call: records "<what> "<path>": <strerror>" for call and
 * returns the class. */
int lmpio__os_class(int e);
int lmpio__os_error(int e, const char *call, const char *what, const char *path);

/* Waiting for another process or thread without taking its processor:
 * lmpio__os_wait_round(&round, pauses, yields) once per turn of a wait
 * whose condition did not hold pauses for the first turns (the other is
 * running and about to store), then yields the processor for the next
 * yields turns, and returns 1 when the caller should sleep in the kernel
 * now (lmpio__os_sleep_on, or a blocking call of its own): a rank waiting
 * for one that has no processor gives its own away (DESIGN.md, Scale).
 * pauses: lmpio__os_spin_turns of the ranks that wait for each other on
 * this machine (long when each has a processor of its own, short when
 * they share them); yields: LMPIO__OS_YIELDS, or lmpio__os_wait_yields. */
#define LMPIO__OS_YIELDS 16
unsigned lmpio__os_spin_turns(int ranks_here);
/* Processors the ranks of this machine may run on (online, within the
 * cgroup's quota); the processors a cpu.max line ("quota period" or "max
 * period") allows: quota / period rounded up, 0 for no limit; and the
 * smallest quota of the cgroups that proc_cgroup (/proc/self/cgroup) names
 * and their parents, under root (/sys/fs/cgroup: v2's cpu.max, v1's
 * cpu/.../cpu.cfs_quota_us and cpu.cfs_period_us), 0 for none. */
long lmpio__os_processors(void);
long lmpio__os_quota_cpus(const char *cpu_max);
long lmpio__os_cgroup_cpus(const char *proc_cgroup, const char *root);
int lmpio__os_wait_round(unsigned *round, unsigned pauses, unsigned yields);
/* The yields of a wait whose pauses (lmpio__os_spin_turns) ran out: none
 * when each rank has a processor of its own and no rank awaited last ran on
 * this one (near 0: a yield would hand the processor to another program,
 * and beside busy ones come back a time slice later); LMPIO__OS_YIELDS
 * otherwise (a yield hands it to a rank awaited). */
unsigned lmpio__os_wait_yields(unsigned pauses, int near);
/* Whether pausing may see awaited of the ranks arrive: only when they may
 * all be running on the other processors (awaited < processors; 0: not
 * known, yes).  Else a wait goes to its yields at once. */
int lmpio__os_pausing_helps(int awaited, long processors);
/* The processor this thread runs on (a few ns: glibc's rseq), -1 unknown. */
int lmpio__os_cpu(void);
/* Sleeps until the 32-bit word at addr (in memory shared between processes
 * or not) no longer holds seen, a wake on addr, or timeout_us; spurious
 * returns are allowed (the caller checks its condition again). */
void lmpio__os_sleep_on(const void *addr, unsigned seen, long timeout_us);
/* Wakes every process or thread sleeping on addr. */
void lmpio__os_wake(const void *addr);

#endif
