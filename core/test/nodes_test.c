/* Node-aware collectives (core/src/nodes.c): the aggregators chosen from a
 * node layout by cb_config_list and cb_nodes (a pure function, given any
 * layout here), the syntax of cb_config_list, and, with ranks pretending to
 * be on two nodes (LMPIO_TEST_NODES), the two-phase path itself: only the
 * aggregators write the file, file domains are aligned to the stripe or to
 * the file system's block, and get_info reports what is in effect. */
#include "testlib.h"
#include "internals.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/vfs.h>

/* A layout from one name per rank: "a,a,b,b". */
static void layout(lmpio__nodes *n, const char *csv) {
  static char names[4096];
  static int at[1024];
  snprintf(names, sizeof names, "%s", csv);
  int size = 0;
  at[size++] = 0;
  for (int i = 0; names[i]; i++)
    if (names[i] == ',') {
      names[i] = '\0';
      at[size++] = i + 1;
    }
  TL_EQ(lmpio__nodes_build(n, size, NULL, names, at), 0);
}

/* The aggregators as "0,2". */
static const char *aggs(const lmpio__nodes *n, const char *list, long long cb_nodes) {
  static char s[1024];
  int agg[LMPIO__MAX_AGGREGATORS];
  int k = lmpio__nodes_aggregators(n, list, cb_nodes, agg, LMPIO__MAX_AGGREGATORS);
  size_t used = 0;
  s[0] = '\0';
  for (int i = 0; i < k; i++) used += (size_t)snprintf(s + used, sizeof s - used, "%s%d", i ? "," : "", agg[i]);
  return s;
}

static void expect(const char *csv, const char *list, long long cb_nodes, const char *want) {
  lmpio__nodes n;
  layout(&n, csv);
  const char *got = aggs(&n, list, cb_nodes);
  if (strcmp(got, want) != 0) {
    tl_case_failed = 1;
    fprintf(stderr, "[rank %d] nodes %s, cb_config_list \"%s\", cb_nodes %lld: aggregators %s, expected %s\n", tl_rank,
            csv, list, cb_nodes, got, want);
  }
  lmpio__nodes_free(&n);
}

static void test_choice(void) {
  /* one node: every rank, as before nodes were known */
  expect("a,a,a,a", "", 0, "0,1,2,3");
  expect("a,a,a,a", "", 2, "0,1");
  /* the default *:1: the first rank of each node */
  expect("a,a,b,b", "", 0, "0,2");
  expect("a,b,a,b", "", 0, "0,1");
  expect("a,a,a,b,b,c", "", 0, "0,3,5");
  /* cb_nodes alone: that many, one per node in turn */
  expect("a,a,b,b", "", 1, "0");
  expect("a,a,b,b", "", 3, "0,1,2");
  expect("a,a,b,b", "", 4, "0,1,2,3");
  expect("a,a,a,a,b,b,b,b", "", 4, "0,1,4,5");
  /* lists: per host, wildcard, first match decides, cb_nodes caps */
  expect("a,a,b,b", "*:2", 0, "0,1,2,3");
  expect("a,a,b,b", "*:2", 2, "0,2");
  expect("a,a,b,b", "*:*", 3, "0,1,2");
  expect("a,a,b,b", "b:2", 0, "2,3");
  expect("a,a,b,b", "b", 0, "2");
  expect("a,a,b,b", "B:*", 0, "2,3");
  expect("a,a,b,b", "b:1,*:2", 0, "0,1,2");
  expect("a,a,b,b", "*:1,b:2", 0, "0,2");
  expect("a,a,b,b", "a:0,*:1", 0, "2");
  expect("a,a,b,b", " a : 2 , b ", 0, "0,1,2");
  expect("a,a,b,b", "a:9", 0, "0,1");
  /* nothing matches: rank 0 alone */
  expect("a,a,b,b", "c:2", 0, "0");
  expect("a,a,b,b", "*:0", 0, "0");
  /* never more than LMPIO__MAX_AGGREGATORS */
  char many[1024] = "";
  for (int r = 0; r < 70; r++) strcat(many, r ? ",h" : "h");
  lmpio__nodes n;
  layout(&n, many);
  int agg[LMPIO__MAX_AGGREGATORS];
  TL_EQ(lmpio__nodes_aggregators(&n, "", 0, agg, LMPIO__MAX_AGGREGATORS), LMPIO__MAX_AGGREGATORS);
  TL_EQ(agg[LMPIO__MAX_AGGREGATORS - 1], LMPIO__MAX_AGGREGATORS - 1);
  TL_CHECK(strcmp(lmpio__nodes_list(&n, "", 0), "*:*") == 0);
  lmpio__nodes_free(&n);
  /* the lists in effect */
  layout(&n, "a,b");
  TL_CHECK(strcmp(lmpio__nodes_list(&n, "", 0), "*:1") == 0);
  TL_CHECK(strcmp(lmpio__nodes_list(&n, "", 2), "*:*") == 0);
  TL_CHECK(strcmp(lmpio__nodes_list(&n, "b:2", 0), "b:2") == 0);
  lmpio__nodes_free(&n);
}

/* The layout itself: nodes numbered by their lowest rank, ranks grouped. */
static void test_layout(void) {
  lmpio__nodes n;
  layout(&n, "x,y,x,z,y");
  TL_EQ(n.nnodes, 3);
  int want_node[] = {0, 1, 0, 2, 1}, want_by[] = {0, 2, 1, 4, 3}, want_first[] = {0, 2, 4, 5};
  for (int r = 0; r < 5; r++) TL_EQ(n.node_of[r], want_node[r]);
  for (int r = 0; r < 5; r++) TL_EQ(n.by_node[r], want_by[r]);
  for (int j = 0; j <= 3; j++) TL_EQ(n.first[j], want_first[j]);
  TL_CHECK(strcmp(n.names + n.name_at[2], "z") == 0);
  lmpio__nodes_free(&n);
  /* from leaders (as MPI_Comm_split_type gives them): names of leaders only */
  const char names[] = "n0\0n2";
  int at[] = {0, 2, 3, 5}, leader[] = {0, 0, 2, 2}; /* ranks 1 and 3 send no name */
  TL_EQ(lmpio__nodes_build(&n, 4, leader, names, at), 0);
  TL_EQ(n.nnodes, 2);
  TL_EQ(n.node_of[3], 1);
  TL_CHECK(strcmp(n.names + n.name_at[1], "n2") == 0);
  lmpio__nodes_free(&n);
}

static void test_syntax(void) {
  const char *good[] = {"*:1", "*:*", "a", "a:2,b:*", "a:1,*:0", " a:1 , b:2 ", "node-1.example.org:4", NULL};
  const char *bad[] = {"", ",", "a:", "a:x", "*x:1", "a*:1", "a:1,", ",a", "a:-1", "a:1:2", "a b:1", ":3", "a,,b", NULL};
  for (int i = 0; good[i]; i++)
    if (lmpio__nodes_config_check(good[i]) != 0) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] \"%s\" refused\n", tl_rank, good[i]);
    }
  for (int i = 0; bad[i]; i++)
    if (lmpio__nodes_config_check(bad[i]) == 0) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] \"%s\" accepted\n", tl_rank, bad[i]);
    }
}

/* ---- ranks on pretended nodes --------------------------------------------- */

/* The first half of the ranks on node "a", the rest on "b". */
static void pretend_two_nodes(void) {
  char spec[4096] = "";
  for (int r = 0; r < tl_size; r++) strcat(spec, r == 0 ? "a" : r < (tl_size + 1) / 2 ? ",a" : ",b");
  setenv("LMPIO_TEST_NODES", spec, 1);
}

static long pwrites, pwrite_min;
static ssize_t counting_pwrite(int fd, const void *b, size_t n, off_t o) {
  pwrites++;
  if (pwrite_min < 0 || o < pwrite_min) pwrite_min = (long)o;
  return lmpio__os_real.pwrite(fd, b, n, o);
}

static long fake_bsize;
static int fake_fstatfs(int fd, struct statfs *st) {
  int rc = lmpio__os_real.fstatfs(fd, st);
  if (rc == 0 && fake_bsize > 0) st->f_bsize = fake_bsize;
  if (fake_bsize < 0) {
    errno = EIO;
    return -1;
  }
  return rc;
}

static const char *info_get(lmpio_file fh, const char *key) {
  static char v[MPI_MAX_INFO_VAL + 1];
  MPI_Info used;
  int flag = 0;
  v[0] = '\0';
  TL_OK(lmpio_file_get_info(fh, &used));
  MPI_Info_get(used, key, MPI_MAX_INFO_VAL, v, &flag);
  MPI_Info_free(&used);
  return flag ? v : NULL;
}

static lmpio_file open_kv(const char *path, const char *const *kv) {
  MPI_Info info;
  MPI_Info_create(&info);
  for (int i = 0; kv && kv[i]; i += 2) MPI_Info_set(info, kv[i], kv[i + 1]);
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  MPI_Info_free(&info);
  return fh;
}

/* Every rank writes blocks of B bytes interleaved with the others' over
 * span bytes (write_at_all through a strided view), then reads them back;
 * returns whether this rank called pwrite during the write. */
static int interleaved(lmpio_file fh, const char *path, int B, long span) {
  long tile = (long)tl_size * B, nblocks = span / tile, n = nblocks * B;
  MPI_Datatype h, t;
  MPI_Type_contiguous(B, MPI_BYTE, &h);
  MPI_Type_create_resized(h, 0, tile, &t);
  MPI_Type_commit(&t);
  TL_OK(lmpio_file_set_view(fh, (MPI_Offset)tl_rank * B, MPI_BYTE, t, "native", MPI_INFO_NULL));
  unsigned char *w = malloc((size_t)n), *r = malloc((size_t)n);
  for (long i = 0; i < n; i++) w[i] = (unsigned char)(tl_rank * 31 + i * 7);
  pwrites = 0;
  pwrite_min = -1;
  lmpio__os.pwrite = counting_pwrite;
  MPI_Status st;
  TL_OK(lmpio_file_write_at_all(fh, 0, w, (int)n, MPI_BYTE, &st));
  lmpio__os.pwrite = lmpio__os_real.pwrite;
  int wrote = pwrites > 0;
  /* Sync-barrier-sync (MPI 4.0 14.6.1): the aggregators' writes, made on
   * other nodes, reach this rank's reads.  The plain pread below is
   * outside MPI: it relies on lmpio's sync having dropped this client's
   * cached pages and size (the caching driver), as a sync before the
   * barrier alone need not (it may run before the writers' sync). */
  TL_OK(lmpio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  TL_OK(lmpio_file_sync(fh));
  /* the file as plain bytes */
  int fd = open(path, O_RDONLY);
  unsigned char *f = malloc((size_t)(nblocks * tile));
  long long got = pread(fd, f, (size_t)(nblocks * tile), 0);
  TL_EQ(got, nblocks * tile);
  close(fd);
  for (long i = 0; i < got; i++) { /* (a short read's tail: nothing to judge) */
    int owner = (int)(i % tile / B);
    unsigned char want = (unsigned char)(owner * 31 + (i / tile * B + i % B) * 7);
    if (f[i] != want) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] file byte %ld is %d, expected %d\n", tl_rank, i, f[i], want);
      break;
    }
  }
  memset(r, 0, (size_t)n);
  TL_OK(lmpio_file_read_at_all(fh, 0, r, (int)n, MPI_BYTE, &st));
  TL_CHECK(memcmp(r, w, (size_t)n) == 0);
  MPI_Type_free(&t);
  free(w);
  free(r);
  free(f);
  return wrote;
}

/* Two nodes: one aggregator each by default (the first rank of each), and
 * only they write; cb_config_list and cb_nodes move them. */
static void test_two_nodes(void) {
  pretend_two_nodes();
  int second = (tl_size + 1) / 2; /* the first rank of node b */
  char want[64];
  char *path = tl_path("nodes");
  lmpio_file fh = open_kv(path, NULL);
  unsetenv("LMPIO_TEST_NODES");
  if (fh == LMPIO_FILE_NULL) return;
  const char *v = info_get(fh, "lmpio_aggregators");
  if (tl_size > 1) snprintf(want, sizeof want, "0,%d", second);
  else snprintf(want, sizeof want, "0");
  TL_CHECK(v && strcmp(v, want) == 0);
  v = info_get(fh, "cb_nodes");
  TL_CHECK(v && atoi(v) == (tl_size > 1 ? 2 : 1));
  v = info_get(fh, "cb_config_list");
  TL_CHECK(v && strcmp(v, tl_size > 1 ? "*:1" : "*:*") == 0);
  /* automatic: the ranks span nodes, the accesses interleave: two-phase */
  int wrote = interleaved(fh, path, 8, 1 << 16);
  int agg = tl_rank == 0 || (tl_size > 1 && tl_rank == second);
  TL_EQ(wrote, agg);
  /* set_info: the ranks of node b only (all of them) */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_config_list", "b:*");
  TL_OK(lmpio_file_set_info(fh, info));
  MPI_Info_free(&info);
  if (tl_size > 1) {
    wrote = interleaved(fh, path, 8, 1 << 16);
    TL_EQ(wrote, tl_rank >= second);
    v = info_get(fh, "cb_nodes");
    TL_CHECK(v && atoi(v) == tl_size - second);
  }
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);

  /* cb_nodes 1 on two nodes: rank 0 alone */
  pretend_two_nodes();
  path = tl_path("nodes1");
  fh = open_kv(path, (const char *[]){"cb_nodes", "1", NULL});
  unsetenv("LMPIO_TEST_NODES");
  if (fh == LMPIO_FILE_NULL) return;
  v = info_get(fh, "lmpio_aggregators");
  TL_CHECK(v && strcmp(v, "0") == 0);
  TL_EQ(interleaved(fh, path, 8, 1 << 16), tl_rank == 0);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* File domains are aligned to striping_unit, else to the file system's
 * block: with two aggregators over 3 * 64 KiB + 4 KiB, the second domain
 * starts at 128 KiB with 64 KiB alignment, at 100 KiB with 4 KiB. */
static long second_domain(const char *const *kv, long bsize, long *align) {
  pretend_two_nodes();
  fake_bsize = bsize;
  lmpio__os.fstatfs = fake_fstatfs;
  char *path = tl_path("align");
  lmpio_file fh = open_kv(path, kv);
  lmpio__os.fstatfs = lmpio__os_real.fstatfs;
  fake_bsize = 0;
  unsetenv("LMPIO_TEST_NODES");
  if (fh == LMPIO_FILE_NULL) return -1;
  const char *v = info_get(fh, "lmpio_fd_alignment");
  *align = v ? atol(v) : -1;
  long start = -1;
  if (tl_size > 1) {
    interleaved(fh, path, 8, 3 * 65536 + 4096);
    long mine = tl_rank == (tl_size + 1) / 2 ? pwrite_min : -1;
    MPI_Allreduce(&mine, &start, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  }
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
  return start;
}

static void test_alignment(void) {
  const char *cb[] = {"romio_cb_write", "enable", "cb_buffer_size", "1048576", NULL};
  const char *stripe[] = {"romio_cb_write", "enable", "cb_buffer_size", "1048576", "striping_unit", "65536",
                          "striping_factor", "4", NULL};
  long align;
  /* the file system's block size, whatever it is */
  char *path = tl_path("statfs");
  lmpio_file fh = open_kv(path, NULL);
  struct statfs sf;
  TL_EQ(statfs(path, &sf), 0);
  const char *v = info_get(fh, "lmpio_fd_alignment");
  TL_CHECK(v && atol(v) == (long)sf.f_bsize);
  TL_CHECK(info_get(fh, "striping_unit") == NULL); /* not given: not reported */
  TL_CHECK(info_get(fh, "striping_factor") == NULL);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
  /* a block of 4 KiB, of 64 KiB; a file system that does not say: 4 KiB */
  long s = second_domain(cb, 4096, &align);
  TL_EQ(align, 4096);
  if (tl_size > 1) TL_EQ(s, 102400);
  s = second_domain(cb, 65536, &align);
  TL_EQ(align, 65536);
  if (tl_size > 1) TL_EQ(s, 131072);
  s = second_domain(cb, -1, &align);
  TL_EQ(align, 4096);
  /* striping_unit wins over the block size, and is reported with the factor */
  s = second_domain(stripe, 4096, &align);
  TL_EQ(align, 65536);
  if (tl_size > 1) TL_EQ(s, 131072);
  path = tl_path("stripe");
  fh = open_kv(path, stripe);
  v = info_get(fh, "striping_unit");
  TL_CHECK(v && strcmp(v, "65536") == 0);
  v = info_get(fh, "striping_factor");
  TL_CHECK(v && strcmp(v, "4") == 0);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* The real layout (no pretending): this machine is one node, every rank
 * (up to 64) aggregates, as before nodes were known. */
static void test_one_node(void) {
  char *path = tl_path("one");
  lmpio_file fh = open_kv(path, NULL);
  const char *v = info_get(fh, "cb_nodes");
  int n = tl_size < LMPIO__MAX_AGGREGATORS ? tl_size : LMPIO__MAX_AGGREGATORS;
  TL_CHECK(v && atoi(v) == n);
  v = info_get(fh, "cb_config_list");
  TL_CHECK(v && strcmp(v, "*:*") == 0);
  v = info_get(fh, "lmpio_aggregators");
  TL_CHECK(v && strncmp(v, "0", 1) == 0);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* The layout found at an open is kept on the caller's communicator (an
 * attribute): the next open on it copies it (no split, no gathers), the
 * same on every rank; a pretended layout is neither kept nor taken; a
 * communicator freed drops what it kept. */
static void test_kept(void) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  TL_CHECK(lmpio__nodes_kept(comm) == NULL);
  char *path = tl_path("kept");
  lmpio_file fh;
  TL_OK(lmpio_file_open(comm, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  const lmpio__nodes *k = lmpio__nodes_kept(comm);
  TL_CHECK(k != NULL);
  if (k) {
    TL_EQ(k->size, tl_size);
    TL_EQ(k->nnodes, fh->nodes.nnodes);
    for (int r = 0; r < tl_size; r++) TL_EQ(k->node_of[r], fh->nodes.node_of[r]);
    TL_CHECK(k->node_of != fh->nodes.node_of && strcmp(k->names, fh->nodes.names) == 0);
  }
  TL_OK(lmpio_file_close(&fh));
  /* again: taken from the communicator, the same layout */
  TL_OK(lmpio_file_open(comm, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  TL_CHECK(lmpio__nodes_kept(comm) == k);
  if (k) { /* (one node here; two in the cluster suite) */
    TL_EQ(fh->nodes.nnodes, k->nnodes);
    for (int r = 0; r < tl_size; r++) TL_EQ(fh->nodes.node_of[r], k->node_of[r]);
    for (int j = 0; j <= k->nnodes; j++) TL_EQ(fh->nodes.first[j], k->first[j]);
  }
  TL_OK(lmpio_file_close(&fh));
  /* pretending: not taken (two nodes), and nothing new kept */
  pretend_two_nodes();
  TL_CHECK(lmpio__nodes_kept(comm) == NULL);
  TL_OK(lmpio_file_open(comm, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  unsetenv("LMPIO_TEST_NODES");
  TL_EQ(fh->nodes.nnodes, tl_size > 1 ? 2 : 1);
  TL_CHECK(lmpio__nodes_kept(comm) == k);
  TL_OK(lmpio_file_close(&fh));
  MPI_Comm_free(&comm); /* (drops it: ASan would see a double free or a leak's use) */
  tl_unlink(path);
}

int main(int argc, char **argv) {
  tl_init(&argc, &argv);
  tl_run("aggregators from the node layout", test_choice);
  tl_run("node layout from names and from leaders", test_layout);
  tl_run("cb_config_list syntax", test_syntax);
  tl_run("two nodes: aggregators placed by node, only they write", test_two_nodes);
  tl_run("file domains aligned to the stripe or the block", test_alignment);
  tl_run("one node: every rank aggregates", test_one_node);
  tl_run("the layout is kept on the communicator for the next open", test_kept);
  return tl_finish();
}
