/*
 * MPI-IO checks that need ranks on more than one machine, written against
 * plain MPI (only MPI_File_* for the data), so that one binary runs on Open
 * MPI's OMPIO, on its ROMIO and on lmpio (liblmpio-mpi.so preloaded):
 *
 *   sieve     independent writes through a strided view of small blocks
 *             interleaved with the other ranks' (read-modify-write by data
 *             sieving), over a background that another rank wrote first
 *   coll      the same layout through write_at_all and write_all
 *   shared    write_shared records from every rank, then read_shared: every
 *             record exactly once, whole
 *   ordered   write_ordered records of varying lengths: rank order, then
 *             read_ordered back
 *   atomic    atomic mode: every rank writes the same strided region at once
 *             (each region must come whole from one rank, its holes keep the
 *             background), and a value written on one rank is read by every
 *             other right after a barrier, without sync
 *   visible   sync-barrier-sync: what one node wrote (overwriting the last
 *             round's bytes, moving the end of file) is what the other node
 *             reads
 *   remade    rank 0 removes the file and makes it again with new bytes
 *             while the other node's client still holds its name (every
 *             rank opened and read it just before): every rank's next open
 *             reaches the new file
 *
 * Built with -DMULTINODE_CAPI (multinode-capi), the same checks go through
 * lmpio's C API instead.
 *
 * Usage: multinode DIR [CHECK...]      (under mpirun; files DIR/mn-*.dat)
 *        multinode --verify DIR        (no MPI: judges the files as they lie
 *                                       in DIR, e.g. the server's brick)
 *
 * Every rank reads the bytes back and judges them; rank 0 prints "ok NAME"
 * or "not ok NAME" and "# ..." lines saying what was wrong.  Environment:
 * MULTINODE_REFUSAL_OK=1 counts a check whose MPI calls returned an error
 * (and wrote nothing wrong that was read back) as passed, "# refused"
 * (not remade: opening a file that is there must work on every mount);
 * MULTINODE_EXPECT_LMPIO=1 checks that lmpio serves the files;
 * MULTINODE_NODES=N checks that the ranks run on N machines;
 * MULTINODE_SCALE=N multiplies the sizes (more blocks, more records).
 * Rank 0 writes DIR/mn-params, the parameters --verify needs and the checks
 * that were not refused.
 */
#include <mpi.h>
#ifdef MULTINODE_CAPI
/* Built with -DMULTINODE_CAPI: the same checks through lmpio's C API, which
 * mirrors MPI-IO one to one (the handle type and the function names differ). */
#include "lmpio.h"
#define MPI_File lmpio_file
#define MPI_File_open lmpio_file_open
#define MPI_File_close lmpio_file_close
#define MPI_File_delete lmpio_file_delete
#define MPI_File_get_info lmpio_file_get_info
#define MPI_File_get_size lmpio_file_get_size
#define MPI_File_set_view lmpio_file_set_view
#define MPI_File_set_atomicity lmpio_file_set_atomicity
#define MPI_File_sync lmpio_file_sync
#define MPI_File_seek lmpio_file_seek
#define MPI_File_seek_shared lmpio_file_seek_shared
#define MPI_File_read_at lmpio_file_read_at
#define MPI_File_write_at lmpio_file_write_at
#define MPI_File_write lmpio_file_write
#define MPI_File_write_all lmpio_file_write_all
#define MPI_File_write_at_all lmpio_file_write_at_all
#define MPI_File_write_shared lmpio_file_write_shared
#define MPI_File_read_shared lmpio_file_read_shared
#define MPI_File_write_ordered lmpio_file_write_ordered
#define MPI_File_read_ordered lmpio_file_read_ordered
#endif
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parameters ---------------------------------------------------------- */

typedef struct {
  int procs;        /* ranks that wrote */
  int block;        /* bytes of a sieve/coll block */
  int nblocks;      /* blocks per rank per round (sieve, coll) */
  int rounds;       /* rounds of sieve and coll */
  int records;      /* write_shared records per rank */
  int recsize;      /* bytes of a record */
  int ordrounds;    /* write_ordered rounds */
  int atrounds;     /* atomic regions */
  int atblocks;     /* written blocks of an atomic region */
  int visrounds;    /* sync-barrier-sync rounds */
} params;

enum { ATBLOCK = 8, VISBYTES = 12000 };

static void default_params(params *p, int procs) {
  int scale = 1;
  const char *s = getenv("MULTINODE_SCALE");
  if (s && atoi(s) > 0) scale = atoi(s);
  p->procs = procs;
  p->block = 16;
  p->nblocks = 1024 * scale;
  p->rounds = 4;
  p->records = 100 * scale;
  p->recsize = 64;
  p->ordrounds = 8;
  p->atrounds = 12;
  p->atblocks = 64 * scale;
  p->visrounds = 6;
}

/* ---- the bytes every check expects -------------------------------------- */

/* Byte j of block n written by rank r (r = -1: the background). Never 0. */
static unsigned char blockbyte(int r, long long n, int j) {
  if (r < 0) return (unsigned char)(0xc0 | ((n * 7 + j) & 0x3f));
  return (unsigned char)(1 + ((r + 1) * 37 + n * 11 + j * 3) % 191);
}

static int block_is(const unsigned char *got, int r, long long n, int len) {
  for (int j = 0; j < len; j++)
    if (got[j] != blockbyte(r, n, j)) return 0;
  return 1;
}

static const char *classify(const unsigned char *got, int r, long long n, int len) {
  int zero = 1, bg = 1;
  for (int j = 0; j < len; j++) {
    zero = zero && got[j] == 0;
    bg = bg && got[j] == blockbyte(-1, n, j);
  }
  (void)r;
  return zero ? "zeros" : bg ? "the background" : "other bytes";
}

/* A bounded list of what was wrong, for the "# " lines. */
typedef struct {
  long long bad;
  char text[600];
} verdict;

static void note(verdict *v, const char *fmt, ...) {
  v->bad++;
  size_t n = strlen(v->text);
  if (v->bad > 4 || n + 2 >= sizeof v->text) return;
  if (n) v->text[n++] = ';', v->text[n++] = ' ';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->text + n, sizeof v->text - n, fmt, ap);
  va_end(ap);
}

/* sieve/coll: each period is procs+1 blocks, block r from rank r, the
 * last one a gap that keeps the background; rounds follow each other. */
static long long strided_len(const params *p) {
  return (long long)p->rounds * p->nblocks * (p->procs + 1) * p->block;
}

static void judge_strided(const params *p, const unsigned char *buf, long long len, verdict *v) {
  if (len != strided_len(p)) note(v, "file size %lld, expected %lld", len, strided_len(p));
  long long nb = (len < strided_len(p) ? len : strided_len(p)) / p->block;
  long long lost = 0, gaps = 0;
  for (long long n = 0; n < nb; n++) {
    int owner = (int)(n % (p->procs + 1));
    if (owner == p->procs) owner = -1;
    const unsigned char *got = buf + n * p->block;
    if (block_is(got, owner, n, p->block)) continue;
    if (owner >= 0) lost++;
    else gaps++;
    if (v->bad < 4)
      note(v, "block %lld (%s) holds %s", n, owner < 0 ? "a gap" : "written", classify(got, owner, n, p->block));
    else v->bad++;
  }
  if (lost || gaps) {
    size_t n = strlen(v->text);
    snprintf(v->text + n, sizeof v->text - n, "%s%lld written blocks lost, %lld gaps overwritten",
             n ? "; " : "", lost, gaps);
  }
}

/* shared: record = magic, rank, seq, then bytes from (rank, seq). */
#define RECMAGIC 0x4d4e5352u
static void make_record(unsigned char *rec, int size, int rank, int seq) {
  uint32_t h[3] = {RECMAGIC, (uint32_t)rank, (uint32_t)seq};
  memcpy(rec, h, sizeof h);
  for (int j = 12; j < size; j++) rec[j] = blockbyte(rank, seq, j);
}

/* Which record rec is ((rank, seq) in *who), or -1 when it is none whole. */
static int parse_record(const unsigned char *rec, int size, const params *p, int *who) {
  uint32_t h[3];
  memcpy(h, rec, sizeof h);
  if (h[0] != RECMAGIC || h[1] >= (uint32_t)p->procs || h[2] >= (uint32_t)p->records) return -1;
  for (int j = 12; j < size; j++)
    if (rec[j] != blockbyte((int)h[1], h[2], j)) return -1;
  *who = (int)h[1] * p->records + (int)h[2];
  return 0;
}

static void judge_shared(const params *p, const unsigned char *buf, long long len, verdict *v) {
  long long want = (long long)p->procs * p->records * p->recsize;
  if (len != want) note(v, "file size %lld, expected %lld", len, want);
  int n = p->procs * p->records;
  int *seen = calloc((size_t)n, sizeof *seen);
  long long garbled = 0, twice = 0, missing = 0;
  for (long long off = 0; off + p->recsize <= len; off += p->recsize) {
    int who;
    if (parse_record(buf + off, p->recsize, p, &who) < 0) garbled++;
    else if (seen[who]++) twice++;
  }
  for (int i = 0; i < n; i++) missing += !seen[i];
  if (garbled || twice || missing)
    note(v, "%lld of %d records missing, %lld twice, %lld slots garbled", missing, n, twice, garbled);
  free(seen);
}

/* ordered: round k, rank r writes ordlen(r, k) bytes. */
static int ordlen(int r, int k) { return 16 + (r * 7 + k * 5) % 40; }

static long long ordered_len(const params *p) {
  long long t = 0;
  for (int k = 0; k < p->ordrounds; k++)
    for (int r = 0; r < p->procs; r++) t += ordlen(r, k);
  return t;
}

static void judge_ordered(const params *p, const unsigned char *buf, long long len, verdict *v) {
  if (len != ordered_len(p)) note(v, "file size %lld, expected %lld", len, ordered_len(p));
  long long off = 0;
  for (int k = 0; k < p->ordrounds; k++)
    for (int r = 0; r < p->procs; r++) {
      int right = off + ordlen(r, k) <= len;
      for (int j = 0; right && j < ordlen(r, k); j++) right = buf[off + j] == blockbyte(r, k * 1000 + j, j);
      if (!right) note(v, "round %d, rank %d's record at %lld is not there", k, r, off);
      off += ordlen(r, k);
    }
}

/* atomic: region k is 2 * atblocks blocks of ATBLOCK bytes; the even ones
 * written by every rank at once (all must come from one), the odd ones keep
 * the background.  After the regions: one ATBLOCK-byte cell per round of the
 * visibility part, holding the last value written. */
static long long atomic_len(const params *p) {
  return (long long)p->atrounds * 2 * p->atblocks * ATBLOCK + ATBLOCK;
}

static void judge_atomic(const params *p, const unsigned char *buf, long long len, verdict *v) {
  if (len != atomic_len(p)) note(v, "file size %lld, expected %lld", len, atomic_len(p));
  for (int k = 0; k < p->atrounds; k++) {
    long long base = (long long)k * 2 * p->atblocks;
    int from = -2;
    int mixed = 0, holes = 0;
    for (int b = 0; b < 2 * p->atblocks; b++) {
      long long n = base + b, off = n * ATBLOCK;
      if (off + ATBLOCK > len) {
        mixed = 1;
        break;
      }
      int owner = -1;
      if (b % 2 == 0) /* whose block is it? */
        for (int r = 0; r < p->procs && owner < 0; r++)
          if (block_is(buf + off, r, n, ATBLOCK)) owner = r;
      if (b % 2 == 1) {
        for (int j = 0; j < ATBLOCK; j++) holes += buf[off + j] != blockbyte(-1, n, j);
      } else if (owner < 0 || (from != -2 && owner != from)) {
        mixed = 1;
      }
      if (b % 2 == 0 && from == -2) from = owner;
    }
    if (mixed) note(v, "region %d is not whole from one rank", k);
    if (holes) note(v, "region %d: holes lost the background", k);
  }
  long long cell = (long long)p->atrounds * 2 * p->atblocks * ATBLOCK;
  int last = p->atrounds - 1;
  if (cell + ATBLOCK <= len)
    for (int j = 0; j < ATBLOCK; j++)
      if (buf[cell + j] != blockbyte(last % p->procs, 5000 + last, j)) {
        note(v, "the visibility cell holds not the last value");
        break;
      }
}

/* visible: round k writes vislen(k) bytes at 0 (each round more). */
static long long vislen(int k) { return VISBYTES + 1000LL * k; }

static void judge_visible(const params *p, int k, const unsigned char *buf, long long len, verdict *v) {
  if (len != vislen(k)) note(v, "round %d: size %lld, expected %lld", k, len, vislen(k));
  long long stale = 0;
  for (long long o = 0; o < len && o < vislen(k); o++) stale += buf[o] != blockbyte(k % p->procs, 7000 + k, (int)(o % 251));
  if (stale) note(v, "round %d: %lld of %lld bytes not what was written", k, stale, vislen(k));
}

/* ---- running the checks -------------------------------------------------- */

static int rank, nprocs, refusal_ok;
static params P;
static const char *dir;
static MPI_Info info;
static char done_list[256]; /* checks that ran without refusal */

/* The outcome of a check on this rank: bytes wrong, calls refused. */
typedef struct {
  verdict v;
  int refused;
  int strict; /* a refusal fails the check even where refusals may pass */
  char why[300];
} outcome;

static void refuse(outcome *o, int rc, const char *what) {
  if (rc == MPI_SUCCESS) return;
  if (!o->refused) {
    char msg[MPI_MAX_ERROR_STRING];
    int n = 0;
#ifdef MULTINODE_CAPI
    snprintf(msg, sizeof msg, "%s", lmpio_last_error_message()); /* (the message names the cause) */
    (void)n;
#else
    MPI_Error_string(rc, msg, &n);
#endif
    snprintf(o->why, sizeof o->why, "rank %d: %s: %.200s", rank, what, msg); /* (MPICH's messages: 512 bytes) */
  }
  o->refused = 1;
}

static int failures;
static double started; /* MPI_Wtime at the start of the check */

/* Agrees on the outcome and prints it (rank 0). */
static void report(const char *name, outcome *o) {
  long long mine[2] = {o->v.bad, o->refused}, all[2];
  MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  /* The first rank with something to say says it. */
  int speaker = (o->v.bad || o->refused) ? rank : nprocs, first;
  MPI_Allreduce(&speaker, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  char text[1000] = "";
  if (first < nprocs) {
    if (rank == first) snprintf(text, sizeof text, "rank %d: %s%s%s", rank, o->v.text, o->v.bad && o->refused ? "; " : "", o->refused ? o->why : "");
    MPI_Bcast(text, sizeof text, MPI_CHAR, first, MPI_COMM_WORLD);
  }
  int pass = all[0] == 0 && (all[1] == 0 || (refusal_ok && !o->strict));
  if (all[1] == 0 && strlen(done_list) + strlen(name) + 2 < sizeof done_list) {
    strcat(done_list, " ");
    strcat(done_list, name);
  }
  if (!pass) failures++;
  if (rank == 0) {
    if (all[0] == 0 && all[1]) printf("%sok %s # refused: %s\n", pass ? "" : "not ", name, text);
    else printf("%sok %s\n", pass ? "" : "not ", name);
    if (all[0]) printf("# %s: %s\n", name, text);
    printf("# %s: %.1f s\n", name, MPI_Wtime() - started);
    fflush(stdout);
  }
}

static char *path_of(const char *name) {
  static char buf[4][1024];
  static int i;
  i = (i + 1) % 4;
  snprintf(buf[i], sizeof buf[i], "%s/mn-%s.dat", dir, name);
  return buf[i];
}

/* Opens a fresh file (removed first). */
static int open_fresh(const char *name, MPI_File *fh, outcome *o) {
  if (rank == 0) MPI_File_delete(path_of(name), MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  int rc = MPI_File_open(MPI_COMM_WORLD, path_of(name), MPI_MODE_CREATE | MPI_MODE_RDWR, info, fh);
  refuse(o, rc, "MPI_File_open");
  return rc;
}

static void sync_barrier_sync(MPI_File fh, outcome *o) {
  refuse(o, MPI_File_sync(fh), "MPI_File_sync");
  MPI_Barrier(MPI_COMM_WORLD);
  refuse(o, MPI_File_sync(fh), "MPI_File_sync");
}

/* Reads the whole file (its size as MPI says) through a byte view. */
static unsigned char *read_all_bytes(MPI_File fh, long long *len, outcome *o) {
  MPI_Offset size = 0;
  refuse(o, MPI_File_get_size(fh, &size), "MPI_File_get_size");
  refuse(o, MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info), "MPI_File_set_view");
  unsigned char *buf = calloc((size_t)size + 1, 1);
  long long got = 0;
  while (got < size) {
    int chunk = size - got > (1 << 30) ? 1 << 30 : (int)(size - got);
    MPI_Status st;
    int n = 0;
    int rc = MPI_File_read_at(fh, got, buf + got, chunk, MPI_BYTE, &st);
    refuse(o, rc, "MPI_File_read_at");
    if (rc != MPI_SUCCESS) break;
    MPI_Get_count(&st, MPI_BYTE, &n);
    if (n <= 0) break;
    got += n;
  }
  if (got < size) note(&o->v, "read %lld of %lld bytes", got, (long long)size);
  *len = got;
  return buf;
}

/* Rank 0 writes the background over [0, len) and everyone syncs. */
static void background(MPI_File fh, long long len, int block, outcome *o) {
  if (rank == 0) {
    unsigned char *bg = malloc((size_t)len);
    for (long long n = 0; n < len / block; n++)
      for (int j = 0; j < block; j++) bg[n * block + j] = blockbyte(-1, n, j);
    MPI_Status st;
    refuse(o, MPI_File_write_at(fh, 0, bg, (int)len, MPI_BYTE, &st), "MPI_File_write_at (background)");
    free(bg);
  }
  sync_barrier_sync(fh, o);
}

/* This rank's blocks of the strided layout, in view order, for one round. */
static unsigned char *strided_data(int round) {
  unsigned char *buf = malloc((size_t)P.nblocks * P.block);
  for (int i = 0; i < P.nblocks; i++) {
    long long n = ((long long)round * P.nblocks + i) * (P.procs + 1) + rank;
    for (int j = 0; j < P.block; j++) buf[(size_t)i * P.block + j] = blockbyte(rank, n, j);
  }
  return buf;
}

static MPI_Datatype strided_type(void) {
  MPI_Datatype blk, t;
  MPI_Type_contiguous(P.block, MPI_BYTE, &blk);
  MPI_Type_create_resized(blk, 0, (MPI_Aint)(P.procs + 1) * P.block, &t);
  MPI_Type_commit(&t);
  MPI_Type_free(&blk);
  return t;
}

static void check_strided(const char *name, int collective) {
  outcome o = {0};
  MPI_File fh;
  if (open_fresh(name, &fh, &o) == MPI_SUCCESS) {
    background(fh, strided_len(&P), P.block, &o);
    MPI_Datatype t = strided_type();
    refuse(&o, MPI_File_set_view(fh, (MPI_Offset)rank * P.block, MPI_BYTE, t, "native", info), "MPI_File_set_view");
    for (int k = 0; k < P.rounds; k++) {
      unsigned char *buf = strided_data(k);
      MPI_Status st;
      MPI_Offset at = (MPI_Offset)k * P.nblocks * P.block;
      int n = P.nblocks * P.block;
      if (!collective) refuse(&o, MPI_File_write(fh, buf, n, MPI_BYTE, &st), "MPI_File_write");
      else if (k % 2 == 0) refuse(&o, MPI_File_write_at_all(fh, at, buf, n, MPI_BYTE, &st), "MPI_File_write_at_all");
      else {
        refuse(&o, MPI_File_seek(fh, at, MPI_SEEK_SET), "MPI_File_seek");
        refuse(&o, MPI_File_write_all(fh, buf, n, MPI_BYTE, &st), "MPI_File_write_all");
      }
      free(buf);
    }
    MPI_Type_free(&t);
    sync_barrier_sync(fh, &o);
    long long len;
    unsigned char *all = read_all_bytes(fh, &len, &o);
    judge_strided(&P, all, len, &o.v);
    free(all);
    refuse(&o, MPI_File_close(&fh), "MPI_File_close");
  }
  report(name, &o);
}

static void check_shared(void) {
  outcome o = {0};
  MPI_File fh;
  if (open_fresh("shared", &fh, &o) == MPI_SUCCESS) {
    unsigned char *rec = malloc((size_t)P.recsize);
    for (int s = 0; s < P.records; s++) {
      MPI_Status st;
      make_record(rec, P.recsize, rank, s);
      refuse(&o, MPI_File_write_shared(fh, rec, P.recsize, MPI_BYTE, &st), "MPI_File_write_shared");
    }
    sync_barrier_sync(fh, &o);
    long long len;
    unsigned char *all = read_all_bytes(fh, &len, &o);
    judge_shared(&P, all, len, &o.v);
    free(all);
    /* Every rank reads records through the shared pointer: all of them
     * together read each record exactly once. */
    refuse(&o, MPI_File_seek_shared(fh, 0, MPI_SEEK_SET), "MPI_File_seek_shared");
    int n = P.procs * P.records;
    int *seen = calloc((size_t)n, sizeof *seen), *tot = calloc((size_t)n, sizeof *tot);
    long long garbled = 0;
    for (int s = 0; s < P.records; s++) {
      MPI_Status st;
      int who, cnt = 0;
      int rc = MPI_File_read_shared(fh, rec, P.recsize, MPI_BYTE, &st);
      refuse(&o, rc, "MPI_File_read_shared");
      if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_BYTE, &cnt);
      if (cnt == P.recsize && parse_record(rec, P.recsize, &P, &who) == 0) seen[who]++;
      else garbled++;
    }
    MPI_Allreduce(seen, tot, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    long long missing = 0, twice = 0;
    for (int i = 0; i < n; i++) missing += tot[i] == 0, twice += tot[i] > 1;
    if (garbled) note(&o.v, "read_shared: %lld reads not a whole record", garbled);
    if (rank == 0 && (missing || twice)) note(&o.v, "read_shared: %lld records never read, %lld read twice", missing, twice);
    free(seen);
    free(tot);
    free(rec);
    refuse(&o, MPI_File_close(&fh), "MPI_File_close");
  }
  report("shared", &o);
}

static void check_ordered(void) {
  outcome o = {0};
  MPI_File fh;
  if (open_fresh("ordered", &fh, &o) == MPI_SUCCESS) {
    unsigned char rec[64];
    for (int k = 0; k < P.ordrounds; k++) {
      MPI_Status st;
      for (int j = 0; j < ordlen(rank, k); j++) rec[j] = blockbyte(rank, k * 1000 + j, j);
      refuse(&o, MPI_File_write_ordered(fh, rec, ordlen(rank, k), MPI_BYTE, &st), "MPI_File_write_ordered");
    }
    sync_barrier_sync(fh, &o);
    long long len;
    unsigned char *all = read_all_bytes(fh, &len, &o);
    judge_ordered(&P, all, len, &o.v);
    free(all);
    refuse(&o, MPI_File_seek_shared(fh, 0, MPI_SEEK_SET), "MPI_File_seek_shared");
    int wrong = 0;
    for (int k = 0; k < P.ordrounds; k++) {
      MPI_Status st;
      int cnt = 0;
      memset(rec, 0, sizeof rec);
      int rc = MPI_File_read_ordered(fh, rec, ordlen(rank, k), MPI_BYTE, &st);
      refuse(&o, rc, "MPI_File_read_ordered");
      if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_BYTE, &cnt);
      int right = cnt == ordlen(rank, k);
      for (int j = 0; right && j < cnt; j++) right = rec[j] == blockbyte(rank, k * 1000 + j, j);
      wrong += !right;
    }
    if (wrong) note(&o.v, "read_ordered: %d of %d records not this rank's", wrong, P.ordrounds);
    refuse(&o, MPI_File_close(&fh), "MPI_File_close");
  }
  report("ordered", &o);
}

static void check_atomic(void) {
  outcome o = {0};
  MPI_File fh;
  if (open_fresh("atomic", &fh, &o) == MPI_SUCCESS) {
    refuse(&o, MPI_File_set_atomicity(fh, 1), "MPI_File_set_atomicity");
    long long len = atomic_len(&P);
    background(fh, len - ATBLOCK, ATBLOCK, &o);
    /* Every rank writes the even blocks of region k at once. */
    MPI_Datatype vec;
    MPI_Type_vector(P.atblocks, ATBLOCK, 2 * ATBLOCK, MPI_BYTE, &vec);
    MPI_Type_commit(&vec);
    unsigned char *buf = malloc((size_t)P.atblocks * ATBLOCK);
    for (int k = 0; k < P.atrounds; k++) {
      long long base = (long long)k * 2 * P.atblocks;
      for (int i = 0; i < P.atblocks; i++)
        for (int j = 0; j < ATBLOCK; j++) buf[i * ATBLOCK + j] = blockbyte(rank, base + 2 * i, j);
      refuse(&o, MPI_File_set_view(fh, base * ATBLOCK, MPI_BYTE, vec, "native", info), "MPI_File_set_view");
      MPI_Status st;
      refuse(&o, MPI_File_write_at(fh, 0, buf, P.atblocks * ATBLOCK, MPI_BYTE, &st), "MPI_File_write_at (atomic)");
    }
    free(buf);
    MPI_Type_free(&vec);
    refuse(&o, MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info), "MPI_File_set_view");
    /* Visibility in atomic mode: one writer, a barrier, every other rank
     * reads the cell at once (no sync); the cell is overwritten each round,
     * alternating between ranks (and so between nodes). */
    long long cell = len - ATBLOCK;
    for (int k = 0; k < P.atrounds; k++) {
      unsigned char v[ATBLOCK], got[ATBLOCK] = {0};
      for (int j = 0; j < ATBLOCK; j++) v[j] = blockbyte(k % P.procs, 5000 + k, j);
      MPI_Status st;
      if (rank == k % P.procs) refuse(&o, MPI_File_write_at(fh, cell, v, ATBLOCK, MPI_BYTE, &st), "MPI_File_write_at (atomic cell)");
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank != k % P.procs) {
        refuse(&o, MPI_File_read_at(fh, cell, got, ATBLOCK, MPI_BYTE, &st), "MPI_File_read_at (atomic cell)");
        if (memcmp(got, v, ATBLOCK)) note(&o.v, "round %d: rank %d wrote the cell, a read right after the barrier saw %s", k, k % P.procs,
                                          got[0] == 0 ? "zeros" : "older bytes");
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
    long long got;
    unsigned char *all = read_all_bytes(fh, &got, &o);
    judge_atomic(&P, all, got, &o.v);
    free(all);
    refuse(&o, MPI_File_close(&fh), "MPI_File_close");
  }
  report("atomic", &o);
}

/* A rank that runs on another machine than rank 0 (the last rank when all
 * share one). */
static int other_node_rank(void) {
  char me[MPI_MAX_PROCESSOR_NAME] = "", zero[MPI_MAX_PROCESSOR_NAME] = "";
  int n, found = nprocs - 1;
  MPI_Get_processor_name(me, &n);
  if (rank == 0) memcpy(zero, me, sizeof zero);
  MPI_Bcast(zero, sizeof zero, MPI_CHAR, 0, MPI_COMM_WORLD);
  int mine = strcmp(me, zero) ? rank : nprocs;
  MPI_Allreduce(&mine, &found, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return found < nprocs ? found : nprocs - 1;
}

static void check_visible(void) {
  outcome o = {0};
  MPI_File fh;
  int other = other_node_rank();
  if (open_fresh("visible", &fh, &o) == MPI_SUCCESS) {
    unsigned char *buf = malloc((size_t)vislen(P.visrounds));
    for (int k = 0; k < P.visrounds; k++) {
      int writer = k % 2 ? other : 0;
      /* (the bytes name the round's writer as judge_visible expects) */
      int who = k % P.procs;
      MPI_Status st;
      if (rank == writer) {
        for (long long b = 0; b < vislen(k); b++) buf[b] = blockbyte(who, 7000 + k, (int)(b % 251));
        refuse(&o, MPI_File_write_at(fh, 0, buf, (int)vislen(k), MPI_BYTE, &st), "MPI_File_write_at");
      }
      sync_barrier_sync(fh, &o);
      if (rank != writer) {
        MPI_Offset size = 0;
        refuse(&o, MPI_File_get_size(fh, &size), "MPI_File_get_size");
        memset(buf, 0, (size_t)vislen(k));
        int cnt = 0;
        int rc = MPI_File_read_at(fh, 0, buf, (int)vislen(k), MPI_BYTE, &st);
        refuse(&o, rc, "MPI_File_read_at");
        if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_BYTE, &cnt);
        verdict v = {0};
        judge_visible(&P, k, buf, size < cnt ? size : cnt, &v);
        if (v.bad) note(&o.v, "rank %d wrote, rank %d read: %s", writer, rank, v.text);
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
    refuse(&o, MPI_File_close(&fh), "MPI_File_close");
  }
  report("visible", &o);
}

/* remade: REMROUNDS rounds of REMLEN bytes, round k's from rank 0 as
 * blockbyte(0, 9000 + k, j). */
enum { REMROUNDS = 4, REMLEN = 4096 };

static void judge_remade(const unsigned char *buf, long long len, int k, verdict *v) {
  if (len != REMLEN) note(v, "file size %lld, expected %d", len, REMLEN);
  long long wrong = 0;
  for (long long j = 0; j < len && j < REMLEN; j++) wrong += buf[j] != blockbyte(0, 9000 + k, (int)(j % 251));
  if (wrong) note(v, "%lld bytes not round %d's", wrong, k);
}

static void check_remade(void) {
  outcome o = {.strict = 1}; /* opening a file that is there works on every mount */
  unsigned char *buf = malloc(REMLEN);
  for (int k = 0; k < REMROUNDS && !o.refused && !o.v.bad; k++) {
    MPI_Status st;
    if (rank == 0) { /* removed and made again, on rank 0's node alone */
      MPI_File f0;
      MPI_File_delete(path_of("remade"), MPI_INFO_NULL);
      int rc = MPI_File_open(MPI_COMM_SELF, path_of("remade"), MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &f0);
      refuse(&o, rc, "MPI_File_open (rank 0 alone)");
      for (int j = 0; j < REMLEN; j++) buf[j] = blockbyte(0, 9000 + k, j % 251);
      if (rc == MPI_SUCCESS) {
        refuse(&o, MPI_File_write_at(f0, 0, buf, REMLEN, MPI_BYTE, &st), "MPI_File_write_at (rank 0 alone)");
        refuse(&o, MPI_File_close(&f0), "MPI_File_close (rank 0 alone)");
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, path_of("remade"), MPI_MODE_RDONLY, info, &fh);
    refuse(&o, rc, "MPI_File_open");
    if (rc == MPI_SUCCESS) {
      memset(buf, 0, REMLEN);
      int cnt = 0;
      rc = MPI_File_read_at(fh, 0, buf, REMLEN, MPI_BYTE, &st);
      refuse(&o, rc, "MPI_File_read_at");
      if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_BYTE, &cnt);
      verdict v = {0};
      judge_remade(buf, cnt, k, &v);
      if (v.bad) note(&o.v, "round %d, rank %d: %s", k, rank, v.text);
      refuse(&o, MPI_File_close(&fh), "MPI_File_close");
    }
    /* Every rank goes on to the next round together (a refusal or a wrong
     * read on one rank ends the check on every rank). */
    long long flags[2] = {o.refused, o.v.bad}, any[2];
    MPI_Allreduce(flags, any, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (any[0] || any[1]) break;
  }
  free(buf);
  report("remade", &o);
}

/* ---- the machines -------------------------------------------------------- */

static void check_machines(void) {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int nrank, leaders = 0, lead;
  MPI_Comm_rank(node, &nrank);
  lead = nrank == 0;
  MPI_Allreduce(&lead, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_free(&node);
  char name[MPI_MAX_PROCESSOR_NAME] = "";
  int n;
  MPI_Get_processor_name(name, &n);
  char *names = rank == 0 ? malloc((size_t)nprocs * MPI_MAX_PROCESSOR_NAME) : NULL;
  MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("# %d ranks on %d machines:", nprocs, leaders);
    for (int r = 0; r < nprocs; r++) printf(" %s", names + (size_t)r * MPI_MAX_PROCESSOR_NAME);
    printf("\n");
    free(names);
  }
  const char *want = getenv("MULTINODE_NODES");
  if (want && *want) {
    outcome o = {0};
    if (leaders != atoi(want)) note(&o.v, "MPI_COMM_TYPE_SHARED gives %d groups", leaders);
    report("machines", &o);
  }
}

static void check_lmpio(void) {
  const char *want = getenv("MULTINODE_EXPECT_LMPIO");
  if (!want || strcmp(want, "1")) return;
  outcome o = {0};
  MPI_File fh;
  if (open_fresh("served", &fh, &o) == MPI_SUCCESS) {
    MPI_Info got;
    int flag = 0;
    char value[MPI_MAX_INFO_VAL + 1];
    if (MPI_File_get_info(fh, &got) == MPI_SUCCESS) {
      MPI_Info_get(got, "lmpio_version", MPI_MAX_INFO_VAL, value, &flag);
      MPI_Info_free(&got);
    }
    if (!flag) note(&o.v, "no lmpio_version in MPI_File_get_info");
    MPI_File_close(&fh);
    if (rank == 0) MPI_File_delete(path_of("served"), MPI_INFO_NULL);
  }
  report("served by lmpio", &o);
}

/* ---- --verify: the files as they lie ------------------------------------- */

static unsigned char *slurp(const char *path, long long *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)*len + 1);
  if (fread(buf, 1, (size_t)*len, f) != (size_t)*len) *len = 0;
  fclose(f);
  return buf;
}

static int verify(const char *vdir) {
  char path[1100], line[512], checks[256] = "";
  snprintf(path, sizeof path, "%s/mn-params", vdir);
  FILE *f = fopen(path, "r");
  if (!f || !fgets(line, sizeof line, f) ||
      sscanf(line, "%d %d %d %d %d %d %d %d %d %d", &P.procs, &P.block, &P.nblocks, &P.rounds, &P.records, &P.recsize,
             &P.ordrounds, &P.atrounds, &P.atblocks, &P.visrounds) != 10) {
    printf("not ok brick: no parameters in %s\n", path);
    if (f) fclose(f);
    return 1;
  }
  if (!fgets(checks, sizeof checks, f)) checks[0] = '\0';
  fclose(f);
  int bad = 0;
  const char *names[] = {"sieve", "coll", "shared", "ordered", "atomic", "visible", "remade"};
  for (int i = 0; i < 7; i++) {
    char key[32];
    snprintf(key, sizeof key, " %s ", names[i]);
    if (!strstr(checks, key)) continue; /* refused or not run: nothing to judge */
    snprintf(path, sizeof path, "%s/mn-%s.dat", vdir, names[i]);
    long long len = 0;
    unsigned char *buf = slurp(path, &len);
    verdict v = {0};
    if (!buf) note(&v, "%s is missing", path);
    else if (!strcmp(names[i], "sieve") || !strcmp(names[i], "coll")) judge_strided(&P, buf, len, &v);
    else if (!strcmp(names[i], "shared")) judge_shared(&P, buf, len, &v);
    else if (!strcmp(names[i], "ordered")) judge_ordered(&P, buf, len, &v);
    else if (!strcmp(names[i], "atomic")) judge_atomic(&P, buf, len, &v);
    else if (!strcmp(names[i], "visible")) judge_visible(&P, P.visrounds - 1, buf, len, &v);
    else judge_remade(buf, len, REMROUNDS - 1, &v);
    free(buf);
    printf("%sok brick %s\n", v.bad ? "not " : "", names[i]);
    if (v.bad) printf("# brick %s: %s\n", names[i], v.text);
    bad += v.bad != 0;
  }
  return bad != 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "--verify")) return verify(argv[2]);
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR [sieve|coll|shared|ordered|atomic|visible|remade]...\n       %s --verify DIR\n", argv[0], argv[0]);
    return 2;
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  dir = argv[1];
  refusal_ok = getenv("MULTINODE_REFUSAL_OK") && !strcmp(getenv("MULTINODE_REFUSAL_OK"), "1");
  default_params(&P, nprocs);
  MPI_Info_create(&info);
  /* Data sieving for the independent writes where the library takes the hint. */
  MPI_Info_set(info, "romio_ds_write", "enable");
  check_machines();
  check_lmpio();
  const char *all[] = {"sieve", "coll", "shared", "ordered", "atomic", "visible", "remade"};
  for (int i = 0; i < 7; i++) {
    int want = argc == 2;
    for (int a = 2; a < argc; a++) want = want || !strcmp(argv[a], all[i]);
    if (!want) continue;
    started = MPI_Wtime();
    if (i == 0) check_strided("sieve", 0);
    if (i == 1) check_strided("coll", 1);
    if (i == 2) check_shared();
    if (i == 3) check_ordered();
    if (i == 4) check_atomic();
    if (i == 5) check_visible();
    if (i == 6) check_remade();
  }
  if (rank == 0) {
    char path[1100];
    snprintf(path, sizeof path, "%s/mn-params", dir);
    FILE *f = fopen(path, "w");
    if (f) {
      fprintf(f, "%d %d %d %d %d %d %d %d %d %d\n%s \n", P.procs, P.block, P.nblocks, P.rounds, P.records, P.recsize,
              P.ordrounds, P.atrounds, P.atblocks, P.visrounds, done_list);
      fclose(f);
    }
  }
  MPI_Info_free(&info);
  MPI_Finalize();
  return failures ? 1 : 0;
}
