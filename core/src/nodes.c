/* The nodes a file's ranks run on, found once at open, and the aggregators
 * of two-phase calls chosen from them by the hints cb_config_list and
 * cb_nodes (ROMIO's syntax and defaults, see lmpio__nodes_aggregators).
 *
 * The choice is a pure function of the layout and the two hints: every rank
 * computes the same list without talking, and tests can give it any layout.
 * LMPIO_TEST_NODES (for tests only) names the node of each rank, "a,a,b,b",
 * in place of what MPI says, so that one machine runs the multi-node path;
 * every rank must see the same value. */
#include "ground.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void lmpio__nodes_free(lmpio__nodes *n) {
  free(n->node_of);
  free(n->names);
  memset(n, 0, sizeof *n);
}

int lmpio__nodes_build(lmpio__nodes *n, int size, const int *leader, const char *names, const int *name_at) {
  memset(n, 0, sizeof *n);
  /* One block: node_of[size], first[size + 1], by_node[size], name_at[size]. */
  int *b = malloc(sizeof(int) * (4 * (size_t)size + 1));
  if (!b) return -1;
  n->size = size;
  n->node_of = b;
  n->first = b + size;
  n->by_node = n->first + size + 1;
  n->name_at = n->by_node + size;
  size_t len = 0;
  for (int r = 0; r < size; r++) {
    int l = r; /* the lowest rank of r's node */
    if (leader) l = leader[r] >= 0 && leader[r] <= r ? leader[r] : r;
    else
      for (int q = 0; q < r && l == r; q++)
        if (strcmp(names + name_at[q], names + name_at[r]) == 0) l = q;
    if (l == r) {
      n->name_at[n->nnodes] = r; /* for now: the rank that names it */
      n->node_of[r] = n->nnodes++;
      len += strlen(names + name_at[r]) + 1;
    } else {
      n->node_of[r] = n->node_of[l];
    }
  }
  n->names = malloc(len);
  if (!n->names) {
    lmpio__nodes_free(n);
    return -1;
  }
  size_t off = 0;
  for (int j = 0; j < n->nnodes; j++) {
    const char *s = names + name_at[n->name_at[j]];
    size_t sl = strlen(s) + 1;
    memcpy(n->names + off, s, sl);
    n->name_at[j] = (int)off;
    off += sl;
  }
  /* The ranks of node j, ascending: by_node[first[j] .. first[j + 1]). */
  memset(n->first, 0, sizeof(int) * ((size_t)n->nnodes + 1));
  for (int r = 0; r < size; r++) n->first[n->node_of[r] + 1]++;
  for (int j = 0; j < n->nnodes; j++) n->first[j + 1] += n->first[j];
  for (int r = 0; r < size; r++) n->by_node[n->first[n->node_of[r]]++] = r;
  for (int j = n->nnodes; j > 0; j--) n->first[j] = n->first[j - 1];
  n->first[0] = 0;
  return 0;
}

/* LMPIO_TEST_NODES="a,a,b,b": rank r is on the node named by entry r
 * (modulo their number). */
static int test_layout(lmpio__nodes *n, int size, const char *spec) {
  size_t sl = strlen(spec);
  char *names = malloc(sl + 1);
  int *at = malloc(sizeof(int) * (size_t)size);
  int rc = -1;
  if (names && at) {
    memcpy(names, spec, sl + 1);
    int ne = 1;
    for (size_t i = 0; i < sl; i++) ne += names[i] == ',';
    /* entry r of the list names rank r's node */
    int e = 0;
    at[0] = 0;
    for (size_t i = 0; i < sl; i++)
      if (names[i] == ',') {
        names[i] = '\0';
        if (++e < size) at[e] = (int)i + 1;
      }
    for (int r = ne; r < size; r++) at[r] = at[r % ne];
    rc = lmpio__nodes_build(n, size, NULL, names, at);
  }
  free(names);
  free(at);
  return rc;
}

int lmpio__nodes_find(MPI_Comm comm, lmpio__nodes *n, const char *call) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  memset(n, 0, sizeof *n);
  const char *spec = getenv("LMPIO_TEST_NODES");
  if (spec && *spec) {
    int rc = test_layout(n, size, spec) < 0 ? lmpio__err(MPI_ERR_NO_MEM, call, "out of memory") : MPI_SUCCESS;
    rc = lmpio__agree(comm, rc, 0, call);
    if (rc != MPI_SUCCESS) lmpio__nodes_free(n);
    return rc;
  }
  /* Each rank's node leader (the lowest rank sharing its memory) and the
   * leaders' processor names, on every rank. */
  int *b = malloc(sizeof(int) * 4 * (size_t)size);
  int rc = lmpio__agree(comm, b ? MPI_SUCCESS : lmpio__err(MPI_ERR_NO_MEM, call, "out of memory"), 0, call);
  if (rc != MPI_SUCCESS) {
    free(b);
    return rc;
  }
  int leader = rank;
  MPI_Comm node;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Bcast(&leader, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);
  }
  char name[MPI_MAX_PROCESSOR_NAME + 1];
  int len = 0;
  if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS || len < 0) len = 0;
  name[len] = '\0';
  int mine[2] = {leader, leader == rank ? len + 1 : 0};
  int *lead = b, *cnt = b + 2 * (size_t)size, *at = cnt + size;
  MPI_Allgather(mine, 2, MPI_INT, lead, 2, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < size; r++) {
    cnt[r] = lead[2 * r + 1];
    at[r] = total;
    total += cnt[r];
    lead[r] = lead[2 * r]; /* packs the leaders in front (r <= 2r) */
  }
  char *names = malloc((size_t)total + 1);
  rc = lmpio__agree(comm, names ? MPI_SUCCESS : lmpio__err(MPI_ERR_NO_MEM, call, "out of memory"), 0, call);
  if (rc == MPI_SUCCESS) {
    MPI_Allgatherv(name, mine[1], MPI_CHAR, names, cnt, at, MPI_CHAR, comm);
    names[total] = '\0';
    if (lmpio__nodes_build(n, size, lead, names, at) < 0) rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
    rc = lmpio__agree(comm, rc, 0, call);
    if (rc != MPI_SUCCESS) lmpio__nodes_free(n);
  }
  free(names);
  free(b);
  return rc;
}

/* ---- the layout kept on the caller's communicator --------------------------- */

/* Finding the layout costs a split and three gathers (about a third of an
 * open at 1 and 2 ranks, measured): a program that opens a file per step
 * on one communicator pays it once.  Its ranks do not move between nodes.
 * A test layout (LMPIO_TEST_NODES) is never kept nor taken. */
static int keyval = MPI_KEYVAL_INVALID;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int drop(MPI_Comm comm, int key, void *value, void *extra) {
  (void)comm;
  (void)key;
  (void)extra;
  lmpio__nodes_free(value);
  free(value);
  return MPI_SUCCESS;
}

static void make_key(void) {
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, drop, &keyval, NULL) != MPI_SUCCESS) keyval = MPI_KEYVAL_INVALID;
}

static int testing(void) {
  const char *spec = getenv("LMPIO_TEST_NODES");
  return spec && *spec;
}

const lmpio__nodes *lmpio__nodes_kept(MPI_Comm comm) {
  pthread_once(&once, make_key);
  if (keyval == MPI_KEYVAL_INVALID || testing()) return NULL;
  void *v = NULL;
  int flag = 0;
  if (MPI_Comm_get_attr(comm, keyval, &v, &flag) != MPI_SUCCESS || !flag) return NULL;
  return v;
}

int lmpio__nodes_copy(const lmpio__nodes *from, lmpio__nodes *to) {
  memset(to, 0, sizeof *to);
  int *b = malloc(sizeof(int) * (4 * (size_t)from->size + 1));
  size_t len = 0;
  for (int j = 0; j < from->nnodes; j++) len += strlen(from->names + from->name_at[j]) + 1;
  char *names = malloc(len ? len : 1);
  if (!b || !names) {
    free(b);
    free(names);
    return -1;
  }
  memcpy(b, from->node_of, sizeof(int) * (4 * (size_t)from->size + 1)); /* (one block, see lmpio__nodes_build) */
  memcpy(names, from->names, len);
  *to = *from;
  to->node_of = b;
  to->first = b + (from->first - from->node_of);
  to->by_node = b + (from->by_node - from->node_of);
  to->name_at = b + (from->name_at - from->node_of);
  to->names = names;
  return 0;
}

void lmpio__nodes_keep(MPI_Comm comm, const lmpio__nodes *n) {
  if (lmpio__nodes_kept(comm) || keyval == MPI_KEYVAL_INVALID || testing()) return;
  lmpio__nodes *k = malloc(sizeof *k);
  if (!k) return;
  if (lmpio__nodes_copy(n, k) < 0) {
    free(k);
    return;
  }
  if (MPI_Comm_set_attr(comm, keyval, k) != MPI_SUCCESS) drop(comm, keyval, k, NULL);
}

/* ---- cb_config_list ------------------------------------------------------ */

/* An entry of a list: "host" or "host:count"; host "*" is any host, count
 * "*" every rank of the host (-1 here), no count is 1.  Spaces around the
 * parts are ignored.  Reads the entry at *p, moves *p past its comma;
 * returns -1 on a syntax error. */
static int next_entry(const char **p, const char **host, size_t *hl, long *count) {
  const char *s = *p, *end = s + strcspn(s, ",");
  while (s < end && isspace((unsigned char)*s)) s++;
  const char *colon = memchr(s, ':', (size_t)(end - s));
  const char *he = colon ? colon : end;
  while (he > s && isspace((unsigned char)he[-1])) he--;
  if (he == s || memchr(s, ' ', (size_t)(he - s)) || (memchr(s, '*', (size_t)(he - s)) && he - s != 1)) return -1;
  *host = s;
  *hl = (size_t)(he - s);
  *count = 1;
  if (colon) {
    const char *c = colon + 1, *ce = end;
    while (c < ce && isspace((unsigned char)*c)) c++;
    while (ce > c && isspace((unsigned char)ce[-1])) ce--;
    if (ce - c == 1 && *c == '*') {
      *count = -1;
    } else {
      if (c == ce || ce - c > 9) return -1;
      long v = 0;
      for (; c < ce; c++) {
        if (!isdigit((unsigned char)*c)) return -1;
        v = v * 10 + (*c - '0');
      }
      *count = v;
    }
  }
  if (*end == ',' && end[1] == '\0') return -1; /* a trailing comma */
  *p = *end ? end + 1 : end;
  return 0;
}

int lmpio__nodes_config_check(const char *list) {
  if (!list || !*list) return -1;
  const char *h;
  size_t hl;
  long c;
  for (const char *p = list; *p;)
    if (next_entry(&p, &h, &hl, &c) < 0) return -1;
  return 0;
}

const char *lmpio__nodes_list(const lmpio__nodes *n, const char *list, long long cb_nodes) {
  if (list && *list) return list;
  /* ROMIO's "*:1", one per node; but on one node every rank (as before
   * nodes were known), and with cb_nodes alone that many, spread. */
  return cb_nodes > 0 || n->nnodes <= 1 ? "*:*" : "*:1";
}

/* The aggregators a list allows on node j: its first entry that names the
 * node or "*" decides (ROMIO's order), at most the node's ranks. */
static int quota(const lmpio__nodes *n, const char *list, int j) {
  const char *name = n->names + n->name_at[j], *h;
  int ranks = n->first[j + 1] - n->first[j];
  size_t hl;
  long c;
  for (const char *p = list; *p;) {
    if (next_entry(&p, &h, &hl, &c) < 0) return 0;
    if ((hl == 1 && *h == '*') || (strlen(name) == hl && strncasecmp(h, name, hl) == 0))
      return c < 0 || c > ranks ? ranks : (int)c;
  }
  return 0;
}

int lmpio__nodes_aggregators(const lmpio__nodes *n, const char *list, long long cb_nodes, int *agg, int max) {
  list = lmpio__nodes_list(n, list, cb_nodes);
  int cap = max < n->size ? max : n->size;
  if (cb_nodes > 0 && cb_nodes < cap) cap = (int)cb_nodes;
  int *q = malloc(sizeof(int) * ((size_t)n->nnodes + 1));
  if (!q) return -1;
  int most = 0;
  for (int j = 0; j < n->nnodes; j++) {
    q[j] = quota(n, list, j);
    if (q[j] > most) most = q[j];
  }
  /* One from each node in turn, so that a cb_nodes below what the list
   * allows still spreads the aggregators over the nodes. */
  int k = 0;
  for (int p = 0; p < most && k < cap; p++)
    for (int j = 0; j < n->nnodes && k < cap; j++)
      if (p < q[j]) agg[k++] = n->by_node[n->first[j] + p];
  free(q);
  if (k == 0) agg[k++] = 0; /* the list names no node of this file: rank 0 */
  for (int i = 1; i < k; i++) /* ascending: domain i goes to agg[i] */
    for (int m = i; m > 0 && agg[m - 1] > agg[m]; m--) {
      int t = agg[m];
      agg[m] = agg[m - 1];
      agg[m - 1] = t;
    }
  return k;
}
