/* lua_bench — the C side of the Lua-overhead benchmark (issue 3).
 *
 *   mpirun -n P lua_bench [DIR [FS_LABEL]]                  C only
 *   mpirun -n P lua_bench --lua bench/lua_bench.lua DIR FS   C and Lua
 *
 * bench/lua_bench.lua runs the same workloads through the Lua module.  With
 * --lua, this program loads liblua5.4.so.0 (dlopen: the Makefile links bench
 * programs with liblmpio.a only), runs that script in a lua_State of this
 * process (it requires lmpio from LUA_CPATH_5_4, default build/lua/?.so) and
 * alternates repetition by repetition: C, Lua, then Lua, C, ... so that the
 * noise of the shared machine hits both sides alike; it prints the RESULT
 * lines of both sides.  bench/lua_bench.sh runs it and prints the comparison.
 * Run with no arguments (as bench/run.sh does) it measures the C side only,
 * on /dev/shm.
 *
 * Workloads, each rank on its own region of one file (no overlap):
 *   small calls: LMPIO_LUA_BENCH_N (200000) calls of lmpio_file_write_at of
 *     8 bytes at consecutive offsets, as 8 x MPI_CHAR (what a Lua string
 *     becomes), 8 x MPI_BYTE (an lmpio.buffer(8)) and 1 x MPI_DOUBLE (an
 *     lmpio.array(DOUBLE, 1)); and lmpio_file_read_at of 8 bytes into one
 *     preallocated 8-byte buffer (MPI_BYTE and MPI_DOUBLE).
 *   large: one lmpio_file_write_at / read_at of LMPIO_LUA_BENCH_MB (64) MiB
 *     of doubles.
 *   conv (Lua only, see bench/lua_bench.lua): the rates of data
 *     representations — native, external32 and the three forms of
 *     lmpio.register_datarep — on one write_at / read_at each.
 * Every measurement is the best of LMPIO_LUA_BENCH_REPS (3) repetitions
 * (LMPIO_LUA_BENCH_LARGE_REPS (10) for the large transfer),
 * each timed from leaving a barrier to the end of the loop; the slowest
 * rank's time counts.  Printed by rank 0, one line each:
 *
 *   RESULT side=c fs=shm ranks=1 test=write8_char calls=200000 ns=812.3 ok=1
 *   RESULT side=lua fs=shm ranks=1 test=write8_string calls=200000 ns=1012.3 ok=1
 *   RESULT side=c fs=shm ranks=1 test=write64m bytes=67108864 mbps=2345.6 sec=0.0286 ok=1
 *
 * (ns per call; mbps decimal MB/s over the data of all ranks).  The Lua side
 * names its small workloads write8_string, write8_buffer, write8_array,
 * read8_buffer, read8_array (the C workloads in the same order) and nop_call.
 *
 * Verification: after the small writes, the whole region is read back in one
 * call and every 8-byte word compared with what was written (a pattern that
 * differs per workload); the region is then filled with distinct words and
 * after the read loop the buffer must hold the last word, plus a sample of
 * single reads is checked.  Large transfers: the file is truncated before
 * every write, the destination zeroed before every read, and the data read
 * is compared with the data written.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Only the declarations: the functions are looked up with dlsym. */
#include <lua5.4/lauxlib.h>
#include <lua5.4/lua.h>
#include <lua5.4/lualib.h>

#include "lmpio.h"

static int rank, nranks;
static const char *fs_label = "shm";

static long envl(const char *name, long def) {
  const char *s = getenv(name);
  if (!s || !*s) return def;
  long v = strtol(s, NULL, 10);
  return v > 0 ? v : def;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "lua_bench (rank %d): %s failed: %s (%s)\n", rank, what,
          lmpio_error_class_name(rc), lmpio_last_error_message());
  MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CK(what, expr)                                                         \
  do {                                                                         \
    int rc_ = (expr);                                                          \
    if (rc_ != MPI_SUCCESS) die(what, rc_);                                    \
  } while (0)

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) {
    fprintf(stderr, "lua_bench: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

/* The slowest rank's time, and whether every rank was ok. */
static double slowest(double t) {
  double m = 0;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}
static int all_ok(int ok) {
  int r = 0;
  MPI_Allreduce(&ok, &r, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return r;
}

/* The 8-byte pattern of small-call workload w (same as lua_bench.lua). */
static void pattern8(int w, unsigned char out[8]) {
  memcpy(out, "lmpio-w0", 8);
  out[7] = (unsigned char)('0' + w);
}

enum { SW_CHAR, SW_BYTE, SW_DOUBLE, SR_BYTE, SR_DOUBLE, NSMALL };
static const char *const small_name[NSMALL] = {"write8_char", "write8_byte", "write8_double",
                                               "read8_byte", "read8_double"};
/* The Lua workload measuring the same thing, and the Lua-only one. */
static const char *const lua_name[NSMALL] = {"write8_string", "write8_buffer", "write8_array",
                                             "read8_buffer", "read8_array"};

/* ---- the C side ------------------------------------------------------------ */

static struct {
  long n;
  lmpio_file fh;
  MPI_Offset base;
  unsigned char *all;
  double *words;
} S;

static struct {
  size_t bytes, n;
  lmpio_file fh;
  MPI_Offset off;
  double *src, *dst;
} L;

static void c_init(const char *dir, long id, long n, size_t mib, int small, int large) {
  char path[4096];
  if (small) {
    snprintf(path, sizeof path, "%s/lmpio-lua-bench-c-%ld-small.dat", dir, id);
    CK("open", lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                               MPI_INFO_NULL, &S.fh));
    S.n = n;
    S.base = (MPI_Offset)rank * n * 8;
    S.all = xmalloc((size_t)n * 8);
    S.words = xmalloc((size_t)n * 8);
    for (long k = 0; k < n; k++) S.words[k] = (double)(S.base / 8 + k) + 0.5;
  }
  if (large) {
    snprintf(path, sizeof path, "%s/lmpio-lua-bench-c-%ld-large.dat", dir, id);
    CK("open", lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                               MPI_INFO_NULL, &L.fh));
    L.bytes = mib << 20;
    L.n = L.bytes / 8;
    L.off = (MPI_Offset)rank * (MPI_Offset)L.bytes;
    L.src = xmalloc(L.bytes);
    L.dst = xmalloc(L.bytes);
    for (size_t k = 0; k < L.n; k++) L.src[k] = (double)(L.off / 8 + (MPI_Offset)k) + 0.25;
    memset(L.dst, 0, L.bytes); /* touch the pages once, as lmpio.array does */
  }
}

static void c_finish(void) {
  if (S.fh) CK("close", lmpio_file_close(&S.fh));
  if (L.fh) CK("close", lmpio_file_close(&L.fh));
  free(S.all);
  free(S.words);
  free(L.src);
  free(L.dst);
  memset(&S, 0, sizeof S);
  memset(&L, 0, sizeof L);
}

/* One repetition of small workload w: seconds (slowest rank); *ok for all ranks. */
static double c_small(int w, int *ok) {
  lmpio_file fh = S.fh;
  long n = S.n;
  MPI_Offset base = S.base;
  unsigned char buf[8] __attribute__((aligned(8)));
  MPI_Status st;
  int writing = w <= SW_DOUBLE, good = 1;
  if (writing) {
    CK("set_size", lmpio_file_set_size(fh, 0));
    pattern8(w, buf);
  } else {
    CK("write_at", lmpio_file_write_at(fh, base, S.words, (int)n, MPI_DOUBLE, &st));
    memset(buf, 0, 8);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  switch (w) {
  case SW_CHAR:
    for (long i = 0; i < n; i++) CK("write_at", lmpio_file_write_at(fh, base + i * 8, buf, 8, MPI_CHAR, &st));
    break;
  case SW_BYTE:
    for (long i = 0; i < n; i++) CK("write_at", lmpio_file_write_at(fh, base + i * 8, buf, 8, MPI_BYTE, &st));
    break;
  case SW_DOUBLE:
    for (long i = 0; i < n; i++) CK("write_at", lmpio_file_write_at(fh, base + i * 8, buf, 1, MPI_DOUBLE, &st));
    break;
  case SR_BYTE:
    for (long i = 0; i < n; i++) CK("read_at", lmpio_file_read_at(fh, base + i * 8, buf, 8, MPI_BYTE, &st));
    break;
  case SR_DOUBLE:
    for (long i = 0; i < n; i++) CK("read_at", lmpio_file_read_at(fh, base + i * 8, buf, 1, MPI_DOUBLE, &st));
    break;
  }
  double t = slowest(MPI_Wtime() - t0);
  if (writing) { /* every word of the region holds the pattern */
    memset(S.all, 0, (size_t)n * 8);
    CK("read_at", lmpio_file_read_at(fh, base, S.all, (int)n * 8, MPI_BYTE, &st));
    for (long k = 0; k < n; k++)
      if (memcmp(S.all + k * 8, buf, 8) != 0) { good = 0; break; }
  } else { /* the last word, and a sample of single reads */
    if (memcmp(buf, &S.words[n - 1], 8) != 0) good = 0;
    for (long k = 0; k < n; k += n / 997 + 1) {
      double v = 0;
      CK("read_at", lmpio_file_read_at(fh, base + k * 8, &v, 1, MPI_DOUBLE, &st));
      if (v != S.words[k]) good = 0;
    }
  }
  if (!good) fprintf(stderr, "lua_bench (rank %d): %s: wrong data\n", rank, small_name[w]);
  *ok = all_ok(good);
  return t;
}

/* One repetition of the large transfer (a read follows a write). */
static double c_large(int reading, int *ok) {
  MPI_Status st;
  int cnt = 0, good = 1;
  if (!reading) CK("set_size", lmpio_file_set_size(L.fh, 0));
  else memset(L.dst, 0, L.bytes);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (!reading) CK("write_at", lmpio_file_write_at(L.fh, L.off, L.src, (int)L.n, MPI_DOUBLE, &st));
  else CK("read_at", lmpio_file_read_at(L.fh, L.off, L.dst, (int)L.n, MPI_DOUBLE, &st));
  double t = slowest(MPI_Wtime() - t0);
  MPI_Get_count(&st, MPI_DOUBLE, &cnt);
  if ((size_t)cnt != L.n) good = 0;
  if (reading && memcmp(L.src, L.dst, L.bytes) != 0) good = 0;
  if (!good) fprintf(stderr, "lua_bench (rank %d): %s%zum: wrong data\n", rank, reading ? "read" : "write", L.bytes >> 20);
  *ok = all_ok(good);
  return t;
}

/* ---- the Lua side, hosted (liblua5.4 through dlopen) ----------------------- */

#define LUAFNS(X)                                                              \
  X(luaL_newstate) X(luaL_openlibs) X(luaL_loadfilex) X(lua_pcallk) X(lua_close) \
  X(lua_tolstring) X(lua_tonumberx) X(lua_toboolean) X(lua_settop) X(lua_pushboolean) \
  X(lua_pushstring) X(lua_setglobal) X(lua_getfield) X(lua_pushvalue) X(lua_gettop)
#define DECL(f) static __typeof__(&f) p_##f;
LUAFNS(DECL)

static lua_State *LS;
static int lua_m; /* stack index of the module table */

static void lua_fail(const char *what) {
  const char *msg = p_lua_tolstring(LS, -1, NULL);
  fprintf(stderr, "lua_bench (rank %d): %s: %s\n", rank, what, msg ? msg : "(no message)");
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void lua_start(const char *script, const char *dir, const char *parts) {
  void *h = dlopen("liblua5.4.so.0", RTLD_NOW | RTLD_GLOBAL);
  if (!h) h = dlopen("liblua5.4.so", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    fprintf(stderr, "lua_bench: cannot load liblua5.4: %s\n", dlerror());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
#define LOAD(f)                                                                \
  if (!(p_##f = (__typeof__(p_##f))dlsym(h, #f))) {                            \
    fprintf(stderr, "lua_bench: liblua5.4 has no %s\n", #f);                   \
    MPI_Abort(MPI_COMM_WORLD, 1);                                              \
  }
  LUAFNS(LOAD)
  setenv("LUA_CPATH_5_4", "build/lua/?.so;;", 0);
  LS = p_luaL_newstate();
  p_luaL_openlibs(LS);
  p_lua_pushboolean(LS, 1);
  p_lua_setglobal(LS, "LMPIO_LUA_BENCH_HOSTED");
  if (p_luaL_loadfilex(LS, script, NULL) != LUA_OK) lua_fail("loading the script");
  if (p_lua_pcallk(LS, 0, 1, 0, 0, NULL) != LUA_OK) lua_fail("running the script");
  lua_m = p_lua_gettop(LS);
  p_lua_getfield(LS, lua_m, "init");
  p_lua_pushstring(LS, dir);
  p_lua_pushstring(LS, fs_label);
  p_lua_pushstring(LS, parts);
  if (p_lua_pcallk(LS, 3, 0, 0, 0, NULL) != LUA_OK) lua_fail("M.init");
}

/* M[fn](arg) -> seconds, ok */
static double lua_rep(const char *fn, const char *arg, int *ok) {
  p_lua_getfield(LS, lua_m, fn);
  p_lua_pushstring(LS, arg);
  if (p_lua_pcallk(LS, 1, 2, 0, 0, NULL) != LUA_OK) lua_fail(fn);
  double t = (double)p_lua_tonumberx(LS, -2, NULL);
  *ok = p_lua_toboolean(LS, -1);
  p_lua_settop(LS, lua_m);
  return t;
}

static void lua_stop(void) {
  p_lua_getfield(LS, lua_m, "finish");
  if (p_lua_pcallk(LS, 0, 0, 0, 0, NULL) != LUA_OK) lua_fail("M.finish");
  p_lua_close(LS); /* lmpio did not initialise MPI here: it leaves it alone */
  LS = NULL;
}

/* ---- main ------------------------------------------------------------------- */

/* The median of x[0..n) (sorted in place). */
static double median(double *x, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && x[j - 1] > x[j]; j--) {
      double t = x[j]; x[j] = x[j - 1]; x[j - 1] = t;
    }
  return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* paired: for the Lua side, the median over repetitions of (Lua - C) ns per
 * call, resp. Lua MB/s / C MB/s, of the two runs of the same repetition. */
static void print_small(const char *side, const char *name, long n, double best, int ok, const double *paired) {
  if (rank != 0) return;
  printf("RESULT side=%s fs=%s ranks=%d test=%s calls=%ld ns=%.1f ok=%d", side, fs_label, nranks, name, n,
         best / (double)n * 1e9, ok);
  if (paired) printf(" paired_added_ns=%.1f", *paired);
  printf("\n");
}

static void print_large(const char *side, const char *op, double best, int ok, const double *paired) {
  if (rank != 0) return;
  printf("RESULT side=%s fs=%s ranks=%d test=%s%zum bytes=%zu mbps=%.1f sec=%.5f ok=%d", side, fs_label,
         nranks, op, L.bytes >> 20, L.bytes, (double)L.bytes * nranks / best / 1e6, best, ok);
  if (paired) printf(" paired_ratio=%.4f", *paired);
  printf("\n");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char *script = NULL;
  int a = 1;
  if (argc > 2 && strcmp(argv[1], "--lua") == 0) {
    script = argv[2];
    a = 3;
  }
  const char *dir = argc > a ? argv[a] : "/dev/shm";
  if (argc > a + 1) fs_label = argv[a + 1];
  else if (argc > a) fs_label = dir;
  long n = envl("LMPIO_LUA_BENCH_N", 200000);
  int reps = (int)envl("LMPIO_LUA_BENCH_REPS", 3);
  int large_reps = (int)envl("LMPIO_LUA_BENCH_LARGE_REPS", 10);
  size_t mib = (size_t)envl("LMPIO_LUA_BENCH_MB", 64);
  const char *parts = getenv("LMPIO_LUA_BENCH_PARTS"); /* "small", "large", "conv" */
  if (!parts || !*parts) parts = "small,large,conv";
  int small = strstr(parts, "small") != NULL, large = strstr(parts, "large") != NULL;
  long id = 0;
  if (rank == 0) id = (long)getpid();
  MPI_Bcast(&id, 1, MPI_LONG, 0, MPI_COMM_WORLD);

  c_init(dir, id, n, mib, small, large);
  if (script) lua_start(script, dir, parts);

  if (small) {
    double *diff = xmalloc(sizeof(double) * (size_t)reps);
    for (int w = 0; w < NSMALL; w++) {
      double bc = 1e30, bl = 1e30;
      int okc = 1, okl = 1, ok;
      for (int r = 0; r < reps; r++) {
        double tc = 0, tl = 0;
        for (int k = 0; k < 2; k++) { /* C, Lua; then Lua, C; ... */
          if ((k == 0) == (r % 2 == 0)) {
            tc = c_small(w, &ok);
            if (tc < bc) bc = tc;
            okc = okc && ok;
          } else if (script) {
            tl = lua_rep("small", lua_name[w], &ok);
            if (tl < bl) bl = tl;
            okl = okl && ok;
          }
        }
        diff[r] = (tl - tc) / (double)n * 1e9;
      }
      print_small("c", small_name[w], n, bc, okc, NULL);
      if (script) {
        double m = median(diff, reps);
        print_small("lua", lua_name[w], n, bl, okl, &m);
      }
    }
    free(diff);
    if (script) { /* the interpreter's floor: a loop calling a no-op C function */
      double bl = 1e30;
      int okl = 1, ok;
      for (int r = 0; r < reps; r++) {
        double t = lua_rep("small", "nop_call", &ok);
        if (t < bl) bl = t;
        okl = okl && ok;
      }
      print_small("lua", "nop_call", n, bl, okl, NULL);
    }
  }
  if (large) {
    double bw[2] = {1e30, 1e30}, br[2] = {1e30, 1e30};
    int okw[2] = {1, 1}, okr[2] = {1, 1}, ok;
    double *rw = xmalloc(sizeof(double) * (size_t)large_reps), *rr = xmalloc(sizeof(double) * (size_t)large_reps);
    for (int r = 0; r < large_reps; r++) {
      double tw[2] = {1, 1}, tr[2] = {1, 1};
      for (int k = 0; k < 2; k++) {
        int side = (k == 0) == (r % 2 == 0) ? 0 : 1; /* 0 C, 1 Lua */
        if (side == 1 && !script) continue;
        tw[side] = side == 0 ? c_large(0, &ok) : lua_rep("large", "write", &ok);
        if (tw[side] < bw[side]) bw[side] = tw[side];
        okw[side] = okw[side] && ok;
        tr[side] = side == 0 ? c_large(1, &ok) : lua_rep("large", "read", &ok);
        if (tr[side] < br[side]) br[side] = tr[side];
        okr[side] = okr[side] && ok;
        okw[side] = okw[side] && ok; /* the read checks what the write wrote */
      }
      rw[r] = tw[0] / tw[1];
      rr[r] = tr[0] / tr[1];
    }
    print_large("c", "write", bw[0], okw[0], NULL);
    print_large("c", "read", br[0], okr[0], NULL);
    if (script) {
      double mw = median(rw, large_reps), mr = median(rr, large_reps);
      print_large("lua", "write", bw[1], okw[1], &mw);
      print_large("lua", "read", br[1], okr[1], &mr);
    }
    free(rw);
    free(rr);
  }
  if (script && strstr(parts, "conv")) { /* the Lua side prints its own RESULT lines */
    int ok;
    fflush(stdout);
    lua_rep("conv_all", "", &ok);
  }
  if (script) lua_stop();
  c_finish();
  MPI_Finalize();
  return 0;
}
