/* Large counts (MPI-4.0): the _c variants of the data access calls move
 * more than INT_MAX elements in one call and their statuses report it;
 * conversion functions registered with lmpio_register_datarep_c get an
 * MPI_Count count. */
#include "testlib.h"

#include <stdint.h>

/* One independent call of 2^31 + 7 bytes, written and read back: rank 0
 * only (the other ranks check the small cases), on a file of its own. */
static void test_write_read_2g(void) {
  char *path = tl_path("large");
  /* In memory where there is /dev/shm: 2 GiB to a disk is slow. */
  if (access("/dev/shm", W_OK) == 0 && !getenv("LMPIO_TEST_DIR")) {
    char *base = strrchr(path, '/');
    char *p = malloc(4096);
    snprintf(p, 4096, "/dev/shm%s", base);
    free(path);
    path = p;
  }
  if (tl_rank == 0) {
    const MPI_Count n = ((MPI_Count)1 << 31) + 7;
    unsigned char *buf = malloc((size_t)n);
    TL_CHECK(buf != NULL);
    if (buf) {
      for (MPI_Count i = 0; i < n; i += 4096) buf[i] = (unsigned char)(i / 4096 * 7 + 1);
      buf[n - 1] = 0x5a;
      lmpio_file fh;
      MPI_Status st;
      MPI_Count got = 0;
      TL_OK(lmpio_file_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
      TL_OK(lmpio_file_write_at_c(fh, 0, buf, n, MPI_BYTE, &st));
      MPI_Get_elements_x(&st, MPI_BYTE, &got);
      TL_EQ(got, n);
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      TL_EQ(count, MPI_UNDEFINED); /* does not fit an int */
      MPI_Offset size = 0;
      TL_OK(lmpio_file_get_size(fh, &size));
      TL_EQ(size, n);
      memset(buf, 0, (size_t)n);
      TL_OK(lmpio_file_read_at_c(fh, 0, buf, n, MPI_BYTE, &st));
      MPI_Get_elements_x(&st, MPI_BYTE, &got);
      TL_EQ(got, n);
      int bad = 0;
      for (MPI_Count i = 0; i < n - 1; i += 4096) bad += buf[i] != (unsigned char)(i / 4096 * 7 + 1);
      TL_EQ(bad, 0);
      TL_EQ(buf[n - 1], 0x5a);
      TL_OK(lmpio_file_close(&fh));
      free(buf);
    }
    unlink(path);
  }
  free(path);
}

/* Every _c call on small data, against its int twin. */
static void test_c_variants(void) {
  char *path = tl_path("cvar");
  lmpio_file fh;
  MPI_Status st;
  MPI_Request rq;
  MPI_Count got;
  int v[4] = {tl_rank * 10 + 1, tl_rank * 10 + 2, tl_rank * 10 + 3, tl_rank * 10 + 4}, r[4];
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  MPI_Offset at = 4 * tl_rank;
  TL_OK(lmpio_file_write_at_all_c(fh, at, v, (MPI_Count)4, MPI_INT, &st));
  MPI_Get_elements_x(&st, MPI_INT, &got);
  TL_EQ(got, 4);
  TL_OK(lmpio_file_read_at_c(fh, at, r, (MPI_Count)4, MPI_INT, &st));
  TL_CHECK(memcmp(v, r, sizeof v) == 0);
  TL_OK(lmpio_file_iread_at_c(fh, at, r, (MPI_Count)2, MPI_INT, &rq));
  MPI_Wait(&rq, &st);
  MPI_Get_elements_x(&st, MPI_INT, &got);
  TL_EQ(got, 2);
  TL_OK(lmpio_file_seek(fh, at, MPI_SEEK_SET));
  memset(r, 0, sizeof r);
  TL_OK(lmpio_file_read_all_c(fh, r, (MPI_Count)4, MPI_INT, &st));
  TL_CHECK(memcmp(v, r, sizeof v) == 0);
  TL_OK(lmpio_file_read_at_all_begin_c(fh, at, r, (MPI_Count)4, MPI_INT));
  TL_OK(lmpio_file_read_at_all_end(fh, r, &st));
  MPI_Get_elements_x(&st, MPI_INT, &got);
  TL_EQ(got, 4);
  /* ordered: rank order after everything written so far */
  TL_OK(lmpio_file_seek_shared(fh, 4 * tl_size, MPI_SEEK_SET));
  TL_OK(lmpio_file_write_ordered_c(fh, v, (MPI_Count)1, MPI_INT, &st));
  TL_OK(lmpio_file_read_at_c(fh, 4 * tl_size + tl_rank, r, (MPI_Count)1, MPI_INT, &st));
  TL_EQ(r[0], v[0]);
  MPI_Count ext = 0;
  TL_OK(lmpio_file_get_type_extent_c(fh, MPI_DOUBLE, &ext));
  TL_EQ(ext, 8);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* A representation registered with MPI_Count conversion functions: big
 * endian 32-bit ints. */
static MPI_Count seen_count;
static int be_write(void *userbuf, MPI_Datatype type, MPI_Count count, void *filebuf, MPI_Offset position,
                    void *extra) {
  (void)type;
  (void)extra;
  seen_count = count;
  const int32_t *u = (const int32_t *)userbuf + position;
  unsigned char *f = filebuf;
  for (MPI_Count i = 0; i < count; i++) {
    uint32_t x = (uint32_t)u[i];
    f[4 * i] = (unsigned char)(x >> 24);
    f[4 * i + 1] = (unsigned char)(x >> 16);
    f[4 * i + 2] = (unsigned char)(x >> 8);
    f[4 * i + 3] = (unsigned char)x;
  }
  return MPI_SUCCESS;
}
static int be_read(void *userbuf, MPI_Datatype type, MPI_Count count, void *filebuf, MPI_Offset position,
                   void *extra) {
  (void)type;
  (void)extra;
  int32_t *u = (int32_t *)userbuf + position;
  const unsigned char *f = filebuf;
  for (MPI_Count i = 0; i < count; i++)
    u[i] = (int32_t)((uint32_t)f[4 * i] << 24 | (uint32_t)f[4 * i + 1] << 16 | (uint32_t)f[4 * i + 2] << 8 | f[4 * i + 3]);
  return MPI_SUCCESS;
}
static int be_extent(MPI_Datatype t, MPI_Aint *ext, void *extra) {
  (void)extra;
  int s;
  MPI_Type_size(t, &s);
  *ext = s;
  return MPI_SUCCESS;
}

static void test_register_datarep_c(void) {
  TL_OK(lmpio_register_datarep_c("be32_c", be_read, be_write, be_extent, NULL));
  TL_RC(lmpio_register_datarep_c("be32_c", be_read, be_write, be_extent, NULL), MPI_ERR_DUP_DATAREP);
  char *path = tl_path("repc");
  lmpio_file fh;
  int v[3] = {0x01020304, -2, tl_rank}, r[3];
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "be32_c", MPI_INFO_NULL));
  TL_OK(lmpio_file_write_at_c(fh, 3 * tl_rank, v, (MPI_Count)3, MPI_INT, MPI_STATUS_IGNORE));
  TL_EQ(seen_count, 3);
  TL_OK(lmpio_file_read_at_c(fh, 3 * tl_rank, r, (MPI_Count)3, MPI_INT, MPI_STATUS_IGNORE));
  TL_CHECK(memcmp(v, r, sizeof v) == 0);
  TL_OK(lmpio_file_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  FILE *f = fopen(path, "rb");
  unsigned char b[4] = {0};
  TL_CHECK(f && fread(b, 1, 4, f) == 4);
  if (f) fclose(f);
  TL_CHECK(b[0] == 1 && b[1] == 2 && b[2] == 3 && b[3] == 4);
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("_c variants of the data access calls", test_c_variants);
  tl_run("register_datarep_c conversion functions get MPI_Count counts", test_register_datarep_c);
  tl_run("one call of 2^31+7 elements, status by MPI_Get_elements_x", test_write_read_2g);
  return tl_finish();
}
