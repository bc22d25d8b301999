/* The handle keeps its plans (fh->plans, plan.c) from one call to the next:
 * every call that changes what a plan holds (the view, the hints, the
 * atomicity) must rebuild them, or the calls after it run the old ones. */
#include "testlib.h"

enum { MAXSTATS = 128, FILE_BYTES = 4096 };

/* A file of FILE_BYTES bytes, byte i holding i % 251, open for reading and
 * writing; every rank wrote the same bytes. */
static lmpio_file open_pattern(const char *path, MPI_Info info) {
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  unsigned char b[FILE_BYTES];
  for (int i = 0; i < FILE_BYTES; i++) b[i] = (unsigned char)(i % 251);
  TL_OK(lmpio_file_write_at_all(fh, 0, b, FILE_BYTES, MPI_BYTE, MPI_STATUS_IGNORE));
  return fh;
}

/* Every other byte: a filetype with holes. */
static MPI_Datatype every_other_byte(void) {
  MPI_Datatype t;
  MPI_Type_create_resized(MPI_BYTE, 0, 2, &t);
  MPI_Type_commit(&t);
  return t;
}

/* set_view: displacement, etype and filetype, for independent and
 * collective reads and for writes. */
static void test_view(void) {
  char *path = tl_path("plans_view");
  lmpio_file fh = open_pattern(path, MPI_INFO_NULL);
  unsigned char c[4] = {0};
  TL_OK(lmpio_file_read_at(fh, 5, c, 1, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(c[0], 5);
  TL_OK(lmpio_file_set_view(fh, 100, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_read_at(fh, 5, c, 1, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(c[0], 105);
  TL_OK(lmpio_file_read_at_all(fh, 6, c, 1, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(c[0], 106);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_read_at(fh, 2, c, 4, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(c[0], 8);
  TL_EQ(c[3], 11);
  MPI_Datatype ft = every_other_byte();
  TL_OK(lmpio_file_set_view(fh, 10, MPI_BYTE, ft, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_read_at(fh, 0, c, 4, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(c[0], 10);
  TL_EQ(c[1], 12);
  TL_EQ(c[3], 16);
  TL_OK(lmpio_file_read_at_all(fh, 1, c, 2, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(c[0], 12);
  TL_EQ(c[1], 14);
  /* A write through it lands on every other byte from 10 (both ranks write
   * the same values). */
  unsigned char w[2] = {200, 201};
  TL_OK(lmpio_file_write_at(fh, 0, w, 2, MPI_BYTE, MPI_STATUS_IGNORE));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  TL_OK(lmpio_file_read_at(fh, 10, c, 4, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(c[0], 200);
  TL_EQ(c[1], 11);
  TL_EQ(c[2], 201);
  TL_EQ(c[3], 13);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* set_atomicity: an atomic read locks its range, a nonatomic one does not. */
static void test_atomicity(void) {
  char *path = tl_path("plans_atomic");
  lmpio_file fh = open_pattern(path, MPI_INFO_NULL);
  unsigned char c[8];
  TL_OK(lmpio_file_read_at(fh, 0, c, 8, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(tl_stat(fh, "LMPIO_LOCKS"), 0);
  TL_OK(lmpio_file_set_atomicity(fh, 1));
  TL_OK(lmpio_file_read_at(fh, 0, c, 8, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(tl_stat(fh, "LMPIO_LOCKS"), 1);
  TL_OK(lmpio_file_set_atomicity(fh, 0));
  TL_OK(lmpio_file_read_at(fh, 0, c, 8, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(tl_stat(fh, "LMPIO_LOCKS"), 1);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* set_info: the data sieving hints of reads through a view with holes,
 * turned on and off. */
static void test_hints(void) {
  char *path = tl_path("plans_hints");
  lmpio_file fh = open_pattern(path, MPI_INFO_NULL);
  MPI_Datatype ft = every_other_byte();
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_ds_read", "enable");
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, ft, "native", info));
  unsigned char c[64];
  TL_OK(lmpio_file_read_at(fh, 0, c, 64, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(c[63], 126);
  TL_EQ(tl_stat(fh, "LMPIO_SIEVED_BYTES_READ"), 64);
  TL_EQ(tl_stat(fh, "LMPIO_DIRECT_BYTES_READ"), 0);
  MPI_Info_set(info, "romio_ds_read", "disable");
  TL_OK(lmpio_file_set_info(fh, info));
  TL_OK(lmpio_file_read_at(fh, 0, c, 64, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(c[63], 126);
  TL_EQ(tl_stat(fh, "LMPIO_SIEVED_BYTES_READ"), 64);
  TL_EQ(tl_stat(fh, "LMPIO_DIRECT_BYTES_READ"), 64);
  MPI_Info_set(info, "romio_ds_read", "enable");
  TL_OK(lmpio_file_set_info(fh, info));
  TL_OK(lmpio_file_read_at(fh, 0, c, 64, MPI_BYTE, MPI_STATUS_IGNORE));
  TL_EQ(tl_stat(fh, "LMPIO_SIEVED_BYTES_READ"), 128);
  MPI_Info_free(&info);
  MPI_Type_free(&ft);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("plans_view", test_view);
  tl_run("plans_atomicity", test_atomicity);
  tl_run("plans_hints", test_hints);
  return tl_finish();
}
