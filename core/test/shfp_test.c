/* The shared file pointer's helper (issue 9, items 5 and 10): created once
 * at open and unlinked at once, so nothing can remove it under a running
 * job and nothing stays after a crash; short names; a directory that takes
 * no new file.  The last case injects EACCES through the os table. */
#include "testlib.h"
#include "internals.h"

#include <dirent.h>
#include <errno.h>

/* Helpers (any ".…lmpio-shfp-…" entry) in the directory of path. */
static int count_helpers(const char *path, int remove) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  const struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] != '.' || !strstr(e->d_name, "lmpio-shfp")) continue;
    const char *base = slash ? slash + 1 : path;
    if (strncmp(e->d_name + 1, base, 8) != 0) continue; /* another test's */
    n++;
    if (remove) {
      char p[8400];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
  }
  closedir(d);
  return n;
}

/* Item 5: removing helper files while the file is open loses nothing
 * (helpers used to be created lazily by each rank: one that had not opened
 * it yet made a fresh one, at zero, and overwrote a record). */
static void test_helper_removed_while_open(void) {
  char *path = tl_path("shfpgone");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  int rec[2] = {tl_rank, 0};
  MPI_Status st;
  if (tl_rank == 0) TL_OK(lmpio_file_write_shared(fh, rec, 2, MPI_INT, &st));
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) count_helpers(path, 1); /* someone cleans up */
  MPI_Barrier(MPI_COMM_WORLD);
  rec[1] = 1;
  TL_OK(lmpio_file_write_shared(fh, rec, 2, MPI_INT, &st));
  TL_OK(lmpio_file_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  /* rank 0's first record and every rank's second, once each */
  int nrec = tl_size + 1;
  FILE *f = fopen(path, "rb");
  int *all = calloc((size_t)(2 * nrec + 2), sizeof(int));
  size_t got = f ? fread(all, sizeof(int), (size_t)(2 * nrec + 2), f) : 0;
  if (f) fclose(f);
  TL_EQ(got, (size_t)(2 * nrec));
  int *seen = calloc((size_t)(2 * tl_size), sizeof(int));
  for (size_t i = 0; i + 1 < got; i += 2)
    if (all[i] >= 0 && all[i] < tl_size && (all[i + 1] == 0 || all[i + 1] == 1)) seen[2 * all[i] + all[i + 1]]++;
  TL_EQ(seen[0], 1);
  for (int r = 0; r < tl_size; r++) TL_EQ(seen[2 * r + 1], 1);
  free(all);
  free(seen);
  tl_unlink(path);
}

/* Item 10: no helper stays (not even while open); delete removes stale ones
 * (older versions, or a crash between create and unlink); a 240-character
 * name works. */
static void test_no_helper_left(void) {
  char *path = tl_path("shfpleft");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  int one = 1;
  MPI_Status st;
  TL_OK(lmpio_file_write_shared(fh, &one, 1, MPI_INT, &st));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_EQ(count_helpers(path, 0), 0);
  TL_OK(lmpio_file_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_EQ(count_helpers(path, 0), 0);
  MPI_Barrier(MPI_COMM_WORLD);
  /* a stale helper of an older version, then delete */
  if (tl_rank == 0) {
    char stale[4400];
    const char *slash = strrchr(path, '/');
    snprintf(stale, sizeof stale, "%.*s/.%s.lmpio-shfp-1234abcd", (int)(slash - path), path, slash + 1);
    FILE *f = fopen(stale, "w");
    if (f) fclose(f);
    TL_EQ(count_helpers(path, 0), 1);
    TL_OK(lmpio_file_delete(path, MPI_INFO_NULL));
    TL_EQ(count_helpers(path, 0), 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  free(path);
}

static void test_long_name(void) {
  char *dir = tl_path("longdir");
  char *path = malloc(8192);
  char name[241];
  memset(name, 'L', 240);
  name[240] = '\0';
  snprintf(path, 8192, "%s-%s", dir, name);
  const char *slash = strrchr(path, '/');
  TL_EQ(strlen(slash + 1) > 240, 1);
  /* the basename must stay legal (at most 255 bytes) */
  if (strlen(slash + 1) > 255) path[(slash - path) + 1 + 255] = '\0';
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  int v = tl_rank, r = -1;
  MPI_Status st;
  TL_OK(lmpio_file_write_shared(fh, &v, 1, MPI_INT, &st));
  TL_OK(lmpio_file_seek_shared(fh, 0, MPI_SEEK_SET));
  TL_OK(lmpio_file_read_shared(fh, &r, 1, MPI_INT, &st));
  TL_CHECK(r >= 0 && r < tl_size);
  TL_OK(lmpio_file_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (tl_rank == 0) unlink(path);
  free(path);
  free(dir);
}

/* Item 10: a readable file in a directory that takes no new file (EACCES
 * injected for files created there): opening it read-only works, and the
 * shared pointer works (one kernel: the helper goes to /dev/shm); forced to
 * the multi-machine mode, the independent shared-pointer calls fail with a
 * clear error and the rest still works. */
static const char *refused_dir;
static int refusing_open(const char *p, int flags, mode_t mode) {
  if ((flags & O_CREAT) && strncmp(p, refused_dir, strlen(refused_dir)) == 0) {
    errno = EACCES;
    return -1;
  }
  return lmpio__os_real.open(p, flags, mode);
}

static void test_unwritable_directory(void) {
  char *path = tl_path("shfpro");
  lmpio_file fh;
  int v[2] = {7, 8};
  MPI_Status st;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  if (tl_rank == 0) TL_OK(lmpio_file_write_at(fh, 0, v, 2, MPI_INT, &st));
  TL_OK(lmpio_file_close(&fh));
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(path, '/') - path), path);
  refused_dir = dir;
  lmpio__os.open = refusing_open;
  for (int forced = 0; forced < 2; forced++) {
    if (forced) setenv("LMPIO_SHARED_FP", "lock", 1);
    TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    int r = 0;
    MPI_Offset pos = -1;
    TL_OK(lmpio_file_get_position_shared(fh, &pos));
    TL_EQ(pos, 0);
    MPI_Barrier(MPI_COMM_WORLD); /* nobody reads before every rank looked */
    if (!forced || tl_size == 1) {
      TL_OK(lmpio_file_read_shared(fh, &r, 1, MPI_INT, &st));
      TL_CHECK(r == 7 || r == 8 || tl_size > 2);
    } else {
      int rc = lmpio_file_read_shared(fh, &r, 1, MPI_INT, &st);
      TL_EQ(rc, MPI_ERR_UNSUPPORTED_OPERATION);
      TL_CHECK(strstr(lmpio_last_error_message(), dir) != NULL);
      TL_OK(lmpio_file_read_ordered(fh, &r, tl_rank < 2 ? 1 : 0, MPI_INT, &st));
      if (tl_rank < 2) TL_EQ(r, v[tl_rank]);
      TL_OK(lmpio_file_get_position_shared(fh, &pos));
      TL_EQ(pos, tl_size < 2 ? 1 : 8);
    }
    TL_OK(lmpio_file_close(&fh));
    unsetenv("LMPIO_SHARED_FP");
  }
  lmpio__os.open = lmpio__os_real.open;
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("item 5: removing helper files under a running job loses nothing", test_helper_removed_while_open);
  tl_run("item 10: no helper file stays; delete removes stale ones", test_no_helper_left);
  tl_run("item 10: a 240-character file name", test_long_name);
  tl_run("item 10: a directory that takes no new file", test_unwritable_directory);
  return tl_finish();
}
