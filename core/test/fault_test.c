/* Fault injection through the os table (core/src/os.c): every system call
 * of each access path is counted, then failed in turn with EIO, ENOSPC,
 * EDQUOT, EINTR and (pread/pwrite) a short transfer, on one rank at a time.
 * Each time: EINTR and short transfers are invisible; the failure has its
 * class, the same on every rank of a collective call, named by the message;
 * no byte of the file outside what the call was asked to write changes, and
 * the bytes it was asked to write hold either the old or the new data; the
 * file can be closed and opened again.  Prints the number of injection
 * points covered. */
#include "testlib.h"
#include <stddef.h>
#include "internals.h"

#include <errno.h>
#include <sys/mman.h>

/* K_GATE: the gate's locks (core/src/gate.c: bytes from 2^62 on), whose
 * failures cost at most a sieve done piece by piece: invisible. */
enum { K_OPEN, K_CLOSE, K_FSTAT, K_FTRUNCATE, K_FALLOCATE, K_FSYNC, K_PREAD, K_PWRITE, K_LOCK, K_MMAP, K_GATE, NKIND };
static const char *kind_name[NKIND] = {"open", "close", "fstat", "ftruncate", "fallocate",
                                       "fsync", "pread", "pwrite", "fcntl", "mmap", "gate fcntl"};
enum { F_EIO, F_ENOSPC, F_EDQUOT, F_EINTR, F_SHORT, NFAIL };
static const char *fail_name[NFAIL] = {"EIO", "ENOSPC", "EDQUOT", "EINTR", "short"};
static const int fail_errno[NFAIL] = {EIO, ENOSPC, EDQUOT, EINTR, 0};
static const int fail_class[NFAIL] = {MPI_ERR_IO, MPI_ERR_NO_SPACE, MPI_ERR_QUOTA, MPI_SUCCESS, MPI_SUCCESS};

static long counts[NKIND], op_counts[NKIND]; /* op_counts: of the operation alone */
static int armed_kind = -1, armed_fail;
static long armed_at;

/* 1: the call fails as armed now (and errno is set); 0: go on. */
static int hit(int k) {
  counts[k]++;
  if (k != armed_kind || counts[k] != armed_at) return 0;
  armed_kind = -1; /* once */
  errno = fail_errno[armed_fail];
  return 1;
}

static int x_open(const char *p, int f, mode_t m) { return hit(K_OPEN) ? -1 : lmpio__os_real.open(p, f, m); }
static int x_close(int fd) {
  if (hit(K_CLOSE)) {
    if (errno != EINTR) lmpio__os_real.close(fd); /* Linux frees the descriptor anyway */
    else lmpio__os_real.close(fd);
    return -1;
  }
  return lmpio__os_real.close(fd);
}
static int x_fstat(int fd, struct stat *st) { return hit(K_FSTAT) ? -1 : lmpio__os_real.fstat(fd, st); }
static int x_ftruncate(int fd, off_t n) { return hit(K_FTRUNCATE) ? -1 : lmpio__os_real.ftruncate(fd, n); }
static int x_fallocate(int fd, off_t o, off_t n) { return hit(K_FALLOCATE) ? errno : lmpio__os_real.fallocate(fd, o, n); }
static int x_fsync(int fd) { return hit(K_FSYNC) ? -1 : lmpio__os_real.fsync(fd); }
static ssize_t x_pread(int fd, void *b, size_t n, off_t o) {
  if (hit(K_PREAD)) {
    if (armed_fail == F_SHORT && n > 1) return lmpio__os_real.pread(fd, b, n / 2, o);
    if (armed_fail != F_SHORT) return -1;
  }
  return lmpio__os_real.pread(fd, b, n, o);
}
static ssize_t x_pwrite(int fd, const void *b, size_t n, off_t o) {
  if (hit(K_PWRITE)) {
    if (armed_fail == F_SHORT && n > 1) return lmpio__os_real.pwrite(fd, b, n / 2, o);
    if (armed_fail != F_SHORT) return -1;
  }
  return lmpio__os_real.pwrite(fd, b, n, o);
}
/* A failed unlock still releases (a lock left behind would only block
 * the other ranks of the test until close, which is not what is tested). */
static int x_lock(int fd, int cmd, struct flock *fl) {
  if (!hit(fl->l_start >= ((off_t)1 << 62) ? K_GATE : K_LOCK)) return lmpio__os_real.fcntl_lock(fd, cmd, fl);
  int e = errno;
  if (fl->l_type == F_UNLCK && e != EINTR) lmpio__os_real.fcntl_lock(fd, cmd, fl);
  errno = e;
  return -1;
}
static void *x_mmap(void *a, size_t n, int prot, int fl, int fd, off_t o) {
  return hit(K_MMAP) ? MAP_FAILED : lmpio__os_real.mmap(a, n, prot, fl, fd, o);
}

static void install(void) {
  lmpio__os.open = x_open;
  lmpio__os.close = x_close;
  lmpio__os.fstat = x_fstat;
  lmpio__os.ftruncate = x_ftruncate;
  lmpio__os.fallocate = x_fallocate;
  lmpio__os.fsync = x_fsync;
  lmpio__os.pread = x_pread;
  lmpio__os.pwrite = x_pwrite;
  lmpio__os.fcntl_lock = x_lock;
  lmpio__os.mmap = x_mmap;
}

/* ---- scenarios ------------------------------------------------------------- */

#define FILE_BYTES 16384
#define MINE 2048 /* data bytes per rank */

typedef struct {
  const char *name;
  const char *hints[3][2];
  int view;       /* 0 bytes, 1 strided 8-byte blocks, 2 strided 1 KiB blocks, 3 external32 ints */
  int write;      /* the operation writes data (else the file must stay as it was) */
  int collective; /* every rank returns the same class */
  int which;      /* the operation (see run_op) */
} scenario;

enum { OP_WRITE_AT, OP_READ_AT, OP_WRITE_AT_ALL, OP_READ_AT_ALL, OP_WRITE_SHARED, OP_READ_SHARED,
       OP_WRITE_ORDERED, OP_READ_ORDERED, OP_SET_SIZE, OP_PREALLOCATE, OP_SYNC, OP_OPEN, OP_CLOSE };

static const scenario scenarios[] = {
  {"write_at contiguous", {{0}}, 0, 1, 0, OP_WRITE_AT},
  {"write_at sieved", {{"romio_ds_write", "enable"}, {"ind_wr_buffer_size", "512"}}, 1, 1, 0, OP_WRITE_AT},
  {"write_at direct", {{"romio_ds_write", "disable"}}, 2, 1, 0, OP_WRITE_AT},
  {"read_at sieved", {{"romio_ds_read", "enable"}, {"ind_rd_buffer_size", "512"}}, 1, 0, 0, OP_READ_AT},
  {"read_at direct", {{"romio_ds_read", "disable"}}, 2, 0, 0, OP_READ_AT},
  {"write_at_all two-phase", {{"romio_cb_write", "enable"}, {"cb_buffer_size", "256"}}, 1, 1, 1, OP_WRITE_AT_ALL},
  {"read_at_all two-phase", {{"romio_cb_read", "enable"}, {"cb_buffer_size", "256"}}, 1, 0, 1, OP_READ_AT_ALL},
  {"write_at_all independent", {{"romio_cb_write", "disable"}}, 2, 1, 1, OP_WRITE_AT_ALL},
  {"write_shared", {{0}}, 0, 1, 0, OP_WRITE_SHARED},
  {"read_shared", {{0}}, 0, 0, 0, OP_READ_SHARED},
  {"write_ordered", {{0}}, 0, 1, 1, OP_WRITE_ORDERED},
  {"read_ordered", {{0}}, 0, 0, 1, OP_READ_ORDERED},
  {"external32 write", {{"lmpio_conversion_buffer_size", "256"}}, 3, 1, 0, OP_WRITE_AT},
  {"external32 read", {{"lmpio_conversion_buffer_size", "256"}}, 3, 0, 0, OP_READ_AT},
  {"set_size", {{0}}, 0, 1, 1, OP_SET_SIZE},
  {"preallocate", {{0}}, 0, 1, 1, OP_PREALLOCATE},
  {"sync", {{0}}, 0, 0, 1, OP_SYNC},
  {"open", {{0}}, 0, 0, 1, OP_OPEN},
  {"close", {{0}}, 0, 0, 1, OP_CLOSE},
};
#define NSCEN (int)(sizeof scenarios / sizeof scenarios[0])

static char *path;
static unsigned char pattern[FILE_BYTES], mine[MINE], got[MINE];

static void make_pattern_file(void) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) {
    FILE *f = fopen(path, "wb");
    fwrite(pattern, 1, FILE_BYTES, f);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static int read_file(unsigned char *out, long *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  *n = (long)fread(out, 1, FILE_BYTES * 2, f);
  fclose(f);
  return 0;
}

static MPI_Info hints_of(const scenario *s) {
  MPI_Info info;
  MPI_Info_create(&info);
  /* The system calls of each path are what is failed here: small accesses
   * through the handle's mapping make none (filemap_test fails its mmap). */
  MPI_Info_set(info, "lmpio_map_reads", "disable");
  MPI_Info_set(info, "lmpio_map_writes", "disable");
  for (int i = 0; i < 3 && s->hints[i][0]; i++) MPI_Info_set(info, s->hints[i][0], s->hints[i][1]);
  return info;
}

static MPI_Datatype ft_strided(int block) {
  MPI_Datatype b, t;
  MPI_Type_contiguous(block, MPI_BYTE, &b);
  MPI_Type_create_resized(b, 0, (MPI_Aint)block * tl_size, &t);
  MPI_Type_commit(&t);
  MPI_Type_free(&b);
  return t;
}

static int set_view(lmpio_file fh, const scenario *s) {
  if (s->view == 0) return MPI_SUCCESS;
  if (s->view == 3) return lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL);
  int block = s->view == 1 ? 8 : 1024;
  MPI_Datatype t = ft_strided(block);
  int rc = lmpio_file_set_view(fh, (MPI_Offset)tl_rank * block, MPI_BYTE, t, "native", MPI_INFO_NULL);
  MPI_Type_free(&t);
  return rc;
}

/* The operation itself, on an open handle (or opening / closing it). */
static int run_op(const scenario *s, lmpio_file *fh) {
  MPI_Status st;
  MPI_Offset at = s->view == 0 ? (MPI_Offset)tl_rank * MINE : s->view == 3 ? (MPI_Offset)tl_rank * (MINE / 4) : 0;
  int n = s->view == 3 ? MINE / 4 : MINE;
  MPI_Datatype t = s->view == 3 ? MPI_INT : MPI_BYTE;
  switch (s->which) {
  case OP_WRITE_AT: return lmpio_file_write_at(*fh, at, mine, n, t, &st);
  case OP_READ_AT: return lmpio_file_read_at(*fh, at, got, n, t, &st);
  case OP_WRITE_AT_ALL: return lmpio_file_write_at_all(*fh, at, mine, n, t, &st);
  case OP_READ_AT_ALL: return lmpio_file_read_at_all(*fh, at, got, n, t, &st);
  case OP_WRITE_SHARED: return lmpio_file_write_shared(*fh, mine, 64, MPI_BYTE, &st);
  case OP_READ_SHARED: return lmpio_file_read_shared(*fh, got, 64, MPI_BYTE, &st);
  case OP_WRITE_ORDERED: return lmpio_file_write_ordered(*fh, mine, 512, MPI_BYTE, &st);
  case OP_READ_ORDERED: return lmpio_file_read_ordered(*fh, got, 512, MPI_BYTE, &st);
  case OP_SET_SIZE: return lmpio_file_set_size(*fh, FILE_BYTES / 2);
  case OP_PREALLOCATE: return lmpio_file_preallocate(*fh, FILE_BYTES * 2);
  case OP_SYNC: return lmpio_file_sync(*fh);
  case OP_CLOSE: return lmpio_file_close(fh);
  default: {
    MPI_Info info = hints_of(s);
    int rc = lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, fh);
    MPI_Info_free(&info);
    return rc;
  }
  }
}

/* One run: fresh pattern file, handle ready, op with the injection armed
 * (kind < 0: none), everything released.  Returns the op's class. */
static int one_run(const scenario *s, int kind, long at, int fail, int armed_rank) {
  make_pattern_file();
  lmpio_file fh = LMPIO_FILE_NULL;
  MPI_Info info = hints_of(s);
  if (s->which != OP_OPEN) {
    TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh));
    TL_OK(set_view(fh, s));
  }
  MPI_Info_free(&info);
  memset(got, 0, sizeof got);
  memset(counts, 0, sizeof counts);
  if (kind >= 0 && tl_rank == armed_rank) {
    armed_kind = kind;
    armed_at = at;
    armed_fail = fail;
  }
  int rc = run_op(s, &fh);
  armed_kind = -1;
  memcpy(op_counts, counts, sizeof counts);
  if (fh != LMPIO_FILE_NULL && s->which != OP_CLOSE) TL_OK(lmpio_file_close(&fh));
  if (s->which == OP_CLOSE && fh != LMPIO_FILE_NULL) lmpio_file_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  return rc;
}

static long points;

static void run_scenario(const scenario *s) {
  /* fault-free: the calls each rank makes, the file and data it gives */
  static unsigned char want_file[FILE_BYTES * 2], now_file[FILE_BYTES * 2], want_got[MINE];
  long want_n = 0, now_n = 0;
  TL_OK(one_run(s, -1, 0, 0, -1));
  long k_counts[NKIND];
  memcpy(k_counts, op_counts, sizeof op_counts);
  if (tl_rank == 0) read_file(want_file, &want_n);
  MPI_Bcast(&want_n, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Bcast(want_file, (int)want_n, MPI_BYTE, 0, MPI_COMM_WORLD);
  memcpy(want_got, got, sizeof got);
  int ranks[2] = {0, tl_size - 1};
  for (int ri = 0; ri < (tl_size > 1 ? 2 : 1); ri++) {
    int fr = ranks[ri];
    long K[NKIND];
    memcpy(K, k_counts, sizeof K);
    MPI_Bcast(K, NKIND, MPI_LONG, fr, MPI_COMM_WORLD);
    for (int kind = 0; kind < NKIND; kind++) {
      if (K[kind] == 0) continue;
      long idx[3] = {1, (K[kind] + 1) / 2, K[kind]};
      for (int ii = 0; ii < 3; ii++) {
        if (ii > 0 && idx[ii] == idx[ii - 1]) continue;
        for (int fail = 0; fail < NFAIL; fail++) {
          if (fail == F_SHORT && kind != K_PREAD && kind != K_PWRITE) continue;
          if (fail == F_EINTR && kind == K_MMAP) continue; /* mmap never reports EINTR */
          int rc = one_run(s, kind, idx[ii], fail, fr);
          points++;
          int bad = 0;
          char what[200];
          snprintf(what, sizeof what, "%s: %s call %ld of %ld on rank %d fails with %s", s->name, kind_name[kind],
                   idx[ii], K[kind], fr, fail_name[fail]);
          int lo = rc, hi = rc;
          MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
          MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
          int invisible = fail == F_EINTR || fail == F_SHORT || kind == K_GATE;
          if (invisible) {
            bad |= rc != MPI_SUCCESS;
            /* (read_shared: which rank reads first varies from run to run) */
            if (!s->write && s->which != OP_READ_SHARED) bad |= memcmp(got, want_got, sizeof got) != 0;
          } else if (tl_rank == fr || s->collective) {
            /* the class: mapped from errno, named by the message (a
             * collective may also fail with a class the failure caused,
             * but then the same on every rank) */
            /* a failed unlock is let go (close drops every lock): only
             * taking a lock must fail the call */
            /* and the shared pointer's helper is optional: failing to
             * create it (open's later open calls) or to close it is not
             * the file's failure */
            int lenient = (kind == K_CLOSE && (s->which != OP_CLOSE || idx[ii] > 1)) ||
                          (kind == K_LOCK && idx[ii] % 2 == 0) ||
                          (s->which == OP_OPEN && !((kind == K_OPEN || kind == K_FSTAT) && idx[ii] == 1));
            bad |= rc == MPI_SUCCESS && !lenient;
            if (rc != MPI_SUCCESS) bad |= strstr(lmpio_last_error_message(), lmpio_error_class_name(rc)) == NULL;
            if (rc != MPI_SUCCESS && kind != K_MMAP && kind != K_LOCK) bad |= rc != fail_class[fail] && tl_rank == fr;
          }
          if (s->collective) bad |= lo != hi;
          /* the file: every byte old or new, the size as it should be */
          if (tl_rank == 0) {
            read_file(now_file, &now_n);
            int size_ok = now_n == want_n || !invisible || s->which == OP_OPEN;
            if (s->which == OP_WRITE_SHARED) { /* records land in any order: compare what they hold */
              long h1[256] = {0}, h2[256] = {0};
              for (long i = 0; i < now_n; i++) h1[now_file[i]]++;
              for (long i = 0; i < want_n; i++) h2[want_file[i]]++;
              if (invisible) bad |= now_n != want_n || memcmp(h1, h2, sizeof h1) != 0;
            } else if (invisible) {
              bad |= now_n != want_n || memcmp(now_file, want_file, (size_t)now_n) != 0;
            } else if (s->which != OP_SET_SIZE && s->which != OP_PREALLOCATE) {
              for (long i = 0; i < now_n && i < FILE_BYTES; i++)
                if (now_file[i] != pattern[i] && (i >= want_n || now_file[i] != want_file[i])) {
                  bad = 1;
                  fprintf(stderr, "[rank 0] %s: byte %ld is %02x (old %02x, new %02x)\n", what, i, now_file[i],
                          pattern[i], i < want_n ? want_file[i] : 0);
                  break;
                }
            }
            bad |= !size_ok;
          }
          /* reopenable and readable */
          lmpio_file fh;
          MPI_Status st;
          unsigned char b[16];
          TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
          TL_OK(lmpio_file_read_at(fh, 0, b, 16, MPI_BYTE, &st));
          TL_OK(lmpio_file_close(&fh));
          if (bad) {
            tl_case_failed = 1;
            fprintf(stderr, "[rank %d] %s: returned %s (%s)\n", tl_rank, what, lmpio_error_class_name(rc),
                    lmpio_last_error_message());
          }
        }
      }
    }
  }
}

static const scenario *current;
static void run_current(void) { run_scenario(current); }

/* A strided read through a mapping of the file (lmpio_map_reads) whose
 * file another program cuts short after the call saw its size (the call's
 * fstat, here the moment of the cut): touching the pages past the new end
 * raises SIGBUS, which must become MPI_ERR_IO, not the end of the process;
 * the handler that was there before still gets every other SIGBUS.  The
 * mapping is the handle's, made by an earlier call and kept. */
static int cut_fd = -1, cut_armed;
static int fstat_then_cut(int fd, struct stat *st) {
  int r = lmpio__os_real.fstat(fd, st);
  if (r == 0 && cut_armed && cut_fd < 0) {
    cut_fd = fd;
    lmpio__os_real.ftruncate(fd, 0);
  }
  return r;
}

static void arm_cut(void) {
  cut_fd = -1;
  cut_armed = 1;
  lmpio__os.fstat = fstat_then_cut;
}

static void disarm_cut(void) {
  cut_armed = 0;
  lmpio__os = lmpio__os_real;
}

static volatile sig_atomic_t user_bus;
static void count_bus(int sig) {
  (void)sig;
  user_bus++;
}

/* The mapped-access cases' start: a file of this rank's own holding 2 *
 * BLOCKS blocks of 7s, opened with the hint key enabled (and
 * romio_ds_write if ds_write), through the view of every other block (*t,
 * of blocks *c). */
enum { BLOCK = 4096, BLOCKS = 64 };
static lmpio_file open_every_other(char **p, const char *tag, const char *key, int ds_write, MPI_Datatype *c,
                                   MPI_Datatype *t) {
  *p = tl_path(tag);
  snprintf(*p + strlen(*p), 32, ".%d", tl_rank);
  lmpio_file fh = LMPIO_FILE_NULL;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, key, "enable");
  if (ds_write) MPI_Info_set(info, "romio_ds_write", "enable");
  lmpio__os = lmpio__os_real;
  TL_OK(lmpio_file_open(MPI_COMM_SELF, *p, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  MPI_Info_free(&info);
  static unsigned char sevens[BLOCK * BLOCKS * 2];
  memset(sevens, 7, sizeof sevens);
  TL_OK(lmpio_file_write_at(fh, 0, sevens, (int)sizeof sevens, MPI_BYTE, MPI_STATUS_IGNORE));
  MPI_Type_contiguous(BLOCK, MPI_BYTE, c);
  MPI_Type_create_resized(*c, 0, 2 * BLOCK, t);
  MPI_Type_commit(t);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, *t, "native", MPI_INFO_NULL));
  return fh;
}

static void close_every_other(lmpio_file *fh, char *p, MPI_Datatype *c, MPI_Datatype *t) {
  TL_OK(lmpio_file_close(fh));
  MPI_Type_free(t);
  MPI_Type_free(c);
  unlink(p);
  free(p);
}

static void test_mapped_read_cut_short(void) {
  char *p;
  MPI_Datatype c, t;
  lmpio_file fh = open_every_other(&p, "mapcut", "lmpio_map_reads", 0, &c, &t);
  static unsigned char buf[BLOCK * BLOCKS * 2];
  MPI_Status st;
  /* a SIGBUS handler of the program's own, there before lmpio's */
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = count_bus;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &old);
  memset(buf, 0, sizeof buf);
  TL_OK(lmpio_file_read_at(fh, 0, buf, BLOCK * BLOCKS, MPI_BYTE, &st)); /* mapped, whole */
  TL_CHECK(buf[0] == 7 && buf[BLOCK * BLOCKS - 1] == 7);
  arm_cut();
  int rc = lmpio_file_read_at(fh, 0, buf, BLOCK * BLOCKS, MPI_BYTE, &st);
  disarm_cut();
  TL_EQ(rc, MPI_ERR_IO);
  TL_CHECK(strstr(lmpio_last_error_message(), "mapping") != NULL);
  TL_CHECK(cut_fd >= 0);
  raise(SIGBUS); /* not from a mapped read: the program's handler */
  TL_EQ(user_bus, 1);
  sigaction(SIGBUS, &old, NULL);
  close_every_other(&fh, p, &c, &t);
}

/* A SIGBUS handler the program sets after lmpio's first mapping (and so
 * over lmpio's) must not take the guard away: the next mapped read whose
 * file is cut short still fails with MPI_ERR_IO, and the program's handler
 * still gets its own SIGBUS.  (Seen failing before: the process died of
 * SIGBUS.) */
static void test_guard_after_program_handler(void) {
  char *p;
  MPI_Datatype c, t;
  lmpio_file fh = open_every_other(&p, "mapguard", "lmpio_map_reads", 0, &c, &t);
  static unsigned char buf[BLOCK * BLOCKS * 2];
  MPI_Status st;
  TL_OK(lmpio_file_read_at(fh, 0, buf, BLOCK * BLOCKS, MPI_BYTE, &st)); /* mapped: lmpio's handler is in */
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = count_bus;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &old); /* the program's, over lmpio's */
  user_bus = 0;
  arm_cut();
  int rc = lmpio_file_read_at(fh, 0, buf, BLOCK * BLOCKS, MPI_BYTE, &st);
  disarm_cut();
  TL_EQ(rc, MPI_ERR_IO);
  TL_CHECK(cut_fd >= 0);
  TL_EQ(user_bus, 0);
  raise(SIGBUS); /* not from a mapped read: the program's handler */
  TL_EQ(user_bus, 1);
  sigaction(SIGBUS, &old, NULL);
  close_every_other(&fh, p, &c, &t);
}

/* The same for a sieved write stored into the handle's mapping of the file
 * (lmpio_map_writes): the file cut short under the writable mapping makes
 * the stores fault; the write is then done again by system calls, and
 * their outcome is the call's: the data reach the file (the holes are
 * zeros now: the cut took their 7s), or, the disk being full, the call
 * fails with MPI_ERR_NO_SPACE (as a write fault on a full disk raises
 * SIGBUS; seen failing before as MPI_ERR_IO). */
static ssize_t pwrite_full(int fd, const void *b, size_t n, off_t o) {
  (void)fd, (void)b, (void)n, (void)o;
  errno = ENOSPC;
  return -1;
}

static void test_mapped_write_cut_short(void) {
  char *p;
  MPI_Datatype c, t;
  lmpio_file fh = open_every_other(&p, "mapwcut", "lmpio_map_writes", 1, &c, &t);
  static unsigned char buf[BLOCK * BLOCKS * 2], back[BLOCK * BLOCKS * 2];
  MPI_Status st;
  memset(buf, 9, sizeof buf);
  TL_OK(lmpio_file_write_at(fh, 0, buf, BLOCK * BLOCKS, MPI_BYTE, &st)); /* mapped, whole */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_read_at(fh, 0, back, (int)sizeof back, MPI_BYTE, &st));
  TL_CHECK(back[0] == 9 && back[BLOCK - 1] == 9 && back[BLOCK] == 7 && back[2 * BLOCK - 1] == 7 &&
           back[sizeof back - BLOCK - 1] == 9 && back[sizeof back - 1] == 7); /* the holes kept theirs */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, t, "native", MPI_INFO_NULL));
  memset(buf, 5, sizeof buf);
  arm_cut();
  int rc = lmpio_file_write_at(fh, 0, buf, BLOCK * BLOCKS, MPI_BYTE, &st);
  disarm_cut();
  TL_EQ(rc, MPI_SUCCESS);
  TL_CHECK(cut_fd >= 0);
  int fd = open(p, O_RDONLY);
  TL_EQ(pread(fd, back, sizeof back, 0), (ssize_t)(sizeof back - BLOCK)); /* up to the last block written */
  close(fd);
  long bad = 0;
  for (size_t i = 0; i < sizeof back - BLOCK; i++) bad += back[i] != (i / BLOCK % 2 ? 0 : 5);
  TL_EQ(bad, 0);
  /* again, with the disk full */
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  memset(back, 7, sizeof back);
  TL_OK(lmpio_file_write_at(fh, 0, back, (int)sizeof back, MPI_BYTE, &st));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, t, "native", MPI_INFO_NULL));
  arm_cut();
  lmpio__os.pwrite = pwrite_full;
  rc = lmpio_file_write_at(fh, 0, buf, BLOCK * BLOCKS, MPI_BYTE, &st);
  disarm_cut();
  TL_EQ(rc, MPI_ERR_NO_SPACE);
  close_every_other(&fh, p, &c, &t);
}

/* A strided read through a mapping of its window (the handle's mapping of
 * the whole file cannot be made here, as for a file over 4 GiB): the same
 * SIGBUS, the same MPI_ERR_IO. */
static void *map_windows_only(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (len >= ((size_t)16 << 20)) { /* (the handle's mapping reaches at least 16 MiB) */
    errno = ENOMEM;
    return MAP_FAILED;
  }
  return lmpio__os_real.mmap(addr, len, prot, flags, fd, off);
}

static void test_window_mapping_cut_short(void) {
  char *p;
  MPI_Datatype c, t;
  lmpio__os_table saved = lmpio__os_real;
  saved.mmap = map_windows_only;
  lmpio_file fh = open_every_other(&p, "mapwin", "lmpio_map_reads", 0, &c, &t);
  static unsigned char buf[BLOCK * BLOCKS * 2];
  MPI_Status st;
  lmpio__os = saved;
  TL_OK(lmpio_file_read_at(fh, 0, buf, BLOCK * BLOCKS, MPI_BYTE, &st));
  TL_CHECK(buf[0] == 7 && buf[BLOCK * BLOCKS - 1] == 7);
  TL_EQ(tl_stat(fh, "POSIX_READS"), 0); /* a mapping of the window */
  arm_cut();
  lmpio__os.mmap = map_windows_only;
  int rc = lmpio_file_read_at(fh, 0, buf, BLOCK * BLOCKS, MPI_BYTE, &st);
  disarm_cut();
  TL_EQ(rc, MPI_ERR_IO);
  TL_CHECK(strstr(lmpio_last_error_message(), "mapping") != NULL);
  TL_CHECK(cut_fd >= 0);
  close_every_other(&fh, p, &c, &t);
}

/* The table of system calls names every entry once (lmpio__os_entries),
 * and an entry replaced by name is the one the table's field holds. */
static void test_os_entries_named(void) {
  TL_EQ((long long)lmpio__os_nentries * (long long)sizeof(void (*)(void)), (long long)sizeof(lmpio__os_table));
  for (int i = 0; i < lmpio__os_nentries; i++)
    for (int j = i + 1; j < lmpio__os_nentries; j++) {
      TL_CHECK(strcmp(lmpio__os_entries[i].name, lmpio__os_entries[j].name) != 0);
      TL_CHECK(lmpio__os_entries[i].offset != lmpio__os_entries[j].offset);
    }
  int found = 0;
  for (int i = 0; i < lmpio__os_nentries; i++)
    if (strcmp(lmpio__os_entries[i].name, "pwrite") == 0) {
      found = 1;
      TL_EQ((long long)lmpio__os_entries[i].offset, (long long)offsetof(lmpio__os_table, pwrite));
    }
  TL_CHECK(found);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  path = tl_path("fault");
  for (int i = 0; i < FILE_BYTES; i++) pattern[i] = (unsigned char)(i * 13 + 5);
  for (int i = 0; i < MINE; i++) mine[i] = (unsigned char)(0x80 ^ (tl_rank * 37 + i * 7 + 1));
  install();
  for (int i = 0; i < NSCEN; i++) {
    char name[128];
    snprintf(name, sizeof name, "fault %s", scenarios[i].name);
    current = &scenarios[i];
    tl_run(name, run_current);
  }
  lmpio__os = lmpio__os_real;
  tl_run("the system calls' table names each entry once", test_os_entries_named);
  tl_run("a mapped read whose file is cut short fails with MPI_ERR_IO", test_mapped_read_cut_short);
  tl_run("a SIGBUS handler set after lmpio's keeps mapped reads guarded", test_guard_after_program_handler);
  tl_run("a mapped write whose file is cut short is done again by system calls (MPI_ERR_NO_SPACE on a full disk)",
         test_mapped_write_cut_short);
  tl_run("a read through a mapping of its window whose file is cut short fails with MPI_ERR_IO",
         test_window_mapping_cut_short);
  if (tl_rank == 0) printf("# fault_test: %ld injection points (scenario x call x failure x failing rank), %d ranks\n", points, tl_size);
  tl_unlink(path);
  return tl_finish();
}
