/* Per-file statistics (core/src/stats.c): lmpio_file_get_stats counts calls
 * by kind and the path each byte took (direct, sieved with its
 * amplification, two-phase), and LMPIO_STATS asks for a summary at close. */
#include "testlib.h"

enum { MAXSTATS = 128 };

/* Statistic `name` of fh (-1 when there is none of that name). */
static void test_names(void) {
  int n = 0;
  char *path = tl_path("names");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_get_stats(fh, NULL, 0, &n));
  TL_CHECK(n > 20 && n <= MAXSTATS);
  TL_CHECK(lmpio_stats_name(n) == NULL && lmpio_stats_name(-1) == NULL);
  for (int i = 0; i < n; i++) TL_CHECK(lmpio_stats_name(i) != NULL);
  TL_EQ(tl_stat(fh, "POSIX_READS"), 0);
  TL_EQ(tl_stat(fh, "MPIIO_INDEP_WRITES"), 0);
  TL_RC(lmpio_file_get_stats(LMPIO_FILE_NULL, NULL, 0, &n), MPI_ERR_FILE);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* A contiguous write and read: direct bytes, no sieving. */
static void test_direct(void) {
  char *path = tl_path("direct");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  char buf[1000];
  memset(buf, tl_rank + 1, sizeof buf);
  TL_OK(lmpio_file_write_at(fh, tl_rank * 1000, buf, 1000, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_read_at(fh, tl_rank * 1000, buf, 1000, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(tl_stat(fh, "MPIIO_INDEP_WRITES"), 1);
  TL_EQ(tl_stat(fh, "MPIIO_INDEP_READS"), 1);
  TL_EQ(tl_stat(fh, "MPIIO_COLL_WRITES"), 0);
  TL_EQ(tl_stat(fh, "LMPIO_DIRECT_BYTES_WRITTEN"), 1000);
  TL_EQ(tl_stat(fh, "LMPIO_DIRECT_BYTES_READ"), 1000);
  TL_EQ(tl_stat(fh, "LMPIO_SIEVED_BYTES_READ"), 0);
  TL_EQ(tl_stat(fh, "LMPIO_SIEVED_BYTES_WRITTEN"), 0);
  TL_EQ(tl_stat(fh, "LMPIO_SIEVE_READ_AMPLIFICATION"), 0);
  TL_EQ(tl_stat(fh, "MPIIO_BYTES_WRITTEN"), 1000);
  TL_EQ(tl_stat(fh, "POSIX_BYTES_WRITTEN"), 1000);
  TL_EQ(tl_stat(fh, "POSIX_WRITES"), 1);
  /* The calls are timed only on a file opened with LMPIO_STATS set. */
  const char *e = getenv("LMPIO_STATS");
  int timed = e && *e && strcmp(e, "0") != 0;
  TL_CHECK(timed ? tl_stat(fh, "MPIIO_F_WRITE_TIME") > 0 : tl_stat(fh, "MPIIO_F_WRITE_TIME") == 0);
  TL_CHECK(timed ? tl_stat(fh, "POSIX_F_WRITE_TIME") > 0 : tl_stat(fh, "POSIX_F_WRITE_TIME") == 0);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Every fourth int through a view with holes, sieving forced: the reads
 * read the whole window (amplification about 4), the writes read it and
 * write it back. */
static void test_sieved(void) {
  char *path = tl_path("sieved");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_ds_read", "enable");
  MPI_Info_set(info, "romio_ds_write", "enable");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  MPI_Datatype ft;
  MPI_Type_create_resized(MPI_INT, 0, 4 * (MPI_Aint)sizeof(int), &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, tl_rank * 100000, MPI_INT, ft, "native", MPI_INFO_NULL));
  int v[256];
  for (int i = 0; i < 256; i++) v[i] = i;
  TL_OK(lmpio_file_write_at(fh, 0, v, 256, MPI_INT, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_read_at(fh, 0, v, 256, MPI_INT, MPI_STATUS_IGNORE));
  TL_EQ(tl_stat(fh, "LMPIO_SIEVED_BYTES_WRITTEN"), 1024);
  TL_EQ(tl_stat(fh, "LMPIO_SIEVED_BYTES_READ"), 1024);
  TL_EQ(tl_stat(fh, "LMPIO_DIRECT_BYTES_READ"), 0);
  double amp = tl_stat(fh, "LMPIO_SIEVE_READ_AMPLIFICATION");
  TL_CHECK(amp > 3.9 && amp < 4.0); /* the window ends at the last int */
  TL_CHECK(tl_stat(fh, "LMPIO_SIEVE_WRITE_AMPLIFICATION") > 1);
  TL_CHECK(tl_stat(fh, "LMPIO_LOCKS") >= 1);
  TL_CHECK(tl_stat(fh, "POSIX_BYTES_READ") >= tl_stat(fh, "LMPIO_SIEVE_READ_SPAN"));
  if (tl_case_failed) fprintf(stderr, "[rank %d] amplification %g\n", tl_rank, amp);
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&ft);
  MPI_Info_free(&info);
  tl_unlink(path);
}

/* Collective calls count as such; with two-phase forced, this rank's data
 * goes the two-phase path, and the aggregators' windows are theirs. */
static void test_collective(void) {
  char *path = tl_path("coll");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "romio_cb_read", "enable");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  MPI_Datatype ft, ct;
  MPI_Type_contiguous(8, MPI_BYTE, &ct);
  MPI_Type_create_resized(ct, 0, 8 * tl_size, &ft);
  MPI_Type_commit(&ft);
  TL_OK(lmpio_file_set_view(fh, tl_rank * 8, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  char buf[800];
  memset(buf, 'a' + tl_rank, sizeof buf);
  TL_OK(lmpio_file_write_at_all(fh, 0, buf, 800, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_OK(lmpio_file_read_at_all(fh, 0, buf, 800, MPI_BYTE, MPI_STATUS_IGNORE));
  MPI_Request req;
  TL_OK(lmpio_file_iwrite_at(fh, 0, buf, 8, MPI_BYTE, &req));
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  TL_EQ(tl_stat(fh, "MPIIO_COLL_WRITES"), 1);
  TL_EQ(tl_stat(fh, "MPIIO_COLL_READS"), 1);
  TL_EQ(tl_stat(fh, "MPIIO_NB_WRITES"), 1);
  TL_EQ(tl_stat(fh, "MPIIO_INDEP_WRITES"), 0);
  TL_EQ(tl_stat(fh, "LMPIO_TWOPHASE_BYTES_WRITTEN"), 800);
  TL_EQ(tl_stat(fh, "LMPIO_TWOPHASE_BYTES_READ"), 800);
  TL_EQ(tl_stat(fh, "MPIIO_BYTES_WRITTEN"), 808);
  double agg = 0, all = 0;
  double mine = tl_stat(fh, "LMPIO_AGGREGATOR_BYTES_WRITTEN");
  MPI_Allreduce(&mine, &agg, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  mine = tl_stat(fh, "LMPIO_TWOPHASE_BYTES_WRITTEN");
  MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  TL_CHECK(agg == all); /* the aggregators wrote every rank's data */
  TL_OK(lmpio_file_close(&fh));
  MPI_Type_free(&ft);
  MPI_Type_free(&ct);
  MPI_Info_free(&info);
  tl_unlink(path);
}

/* LMPIO_STATS=1: close prints one summary, rank 0's, summed over the
 * ranks, to standard error: here redirected to a file that rank 0 reads. */
static void test_summary(void) {
  char *path = tl_path("summary");
  char *out = tl_path("summary.err");
  fflush(stderr);
  int saved = dup(2);
  if (tl_rank == 0) {
    FILE *f = freopen(out, "w", stderr);
    TL_CHECK(f != NULL);
  }
  setenv("LMPIO_STATS", "1", 1);
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  char buf[100] = {0};
  TL_OK(lmpio_file_write_at(fh, tl_rank * 100, buf, 100, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_CHECK(tl_stat(fh, "MPIIO_F_WRITE_TIME") > 0); /* timed: opened with LMPIO_STATS set */
  TL_CHECK(tl_stat(fh, "POSIX_F_WRITE_TIME") > 0);  /* its system calls too (files before it were not) */
  TL_OK(lmpio_file_close(&fh));
  unsetenv("LMPIO_STATS");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  if (tl_rank == 0) {
    FILE *f = fopen(out, "r");
    char text[8192] = "";
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f) fclose(f);
    TL_CHECK(strstr(text, "lmpio: statistics of") != NULL);
    char want[128];
    snprintf(want, sizeof want, "MPIIO_INDEP_WRITES               %d\n", tl_size);
    TL_CHECK(strstr(text, want) != NULL);
    snprintf(want, sizeof want, "MPIIO_BYTES_WRITTEN              %d\n", 100 * tl_size);
    TL_CHECK(strstr(text, want) != NULL);
    if (tl_case_failed) fprintf(stderr, "summary:\n%s\n", text);
  }
  tl_unlink(out);
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("stats_names", test_names);
  tl_run("stats_direct", test_direct);
  tl_run("stats_sieved", test_sieved);
  tl_run("stats_collective", test_collective);
  tl_run("stats_summary", test_summary);
  return tl_finish();
}
