/* Records in rank order (lmpio_file_read_records_ordered).
 *
 * Each call reads about max bytes per rank with one read_ordered (so it
 * works on regular files and streams alike), which lays the ranks' chunks
 * one after the other: G = carry | chunk 0 | chunk 1 | ... , where carry
 * (held by rank 0, in front of its chunk) is the record the previous call
 * left unfinished.  A record starts at the start of G and after every
 * separator; each record belongs to the rank whose chunk holds its first
 * byte.  One MPI_Allgather of five numbers per rank (chunk length, first and
 * last record start inside it, whether it ends with the separator, whether
 * the read came short: end of input) lets every rank compute every piece's
 * destination without looking at other ranks' bytes:
 *
 *  - the bytes of a chunk before its first record start continue a record
 *    of an earlier rank: they go to that rank (the nearest one before that
 *    has a record start), after its own bytes and those of the ranks between;
 *  - the bytes from its first record start stay;
 *  - the bytes of the last record, while the input has not ended, form the
 *    new carry: they go to rank 0 for the next call.
 *
 * Pieces move point to point on the records' own communicator.  The input
 * is exhausted when a call finds no byte anywhere at end of input; every
 * rank knows it from the same gathered numbers, so all stop together. */
#include "run.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static void drop_carry(lmpio__records *r) {
  free(r->carry);
  r->carry = NULL;
  r->carry_len = r->carry_cap = 0;
}

/* Rank 0 reads each chunk right after the carry, in the carry's buffer,
 * grown by doubling: a record longer than many chunks is neither copied
 * again nor searched again at every call (it has no separator: the carry
 * is what follows the last one), so a call costs its chunk, not the record
 * so far (max 1 over 80000 bytes without a separator: 1.05 s before, the
 * carry copied and searched at every call).  0 when there is no memory. */
static int reserve(lmpio__records *r, MPI_Count need) {
  if (need <= r->carry_cap) return 1;
  MPI_Count cap = r->carry_cap ? r->carry_cap : 4096;
  while (cap < need) cap *= 2;
  char *p = realloc(r->carry, (size_t)cap);
  if (!p) return 0;
  r->carry = p;
  r->carry_cap = cap;
  return 1;
}

int lmpio_file_drop_records(lmpio_file fh) {
  if (fh == LMPIO_FILE_NULL)
    return lmpio__err(MPI_ERR_FILE, "lmpio_file_drop_records", "file handle is LMPIO_FILE_NULL");
  if (fh->records) drop_carry(fh->records);
  return MPI_SUCCESS;
}

/* One read_ordered of n bytes, counted in the statistics as one. */
static int read_ordered(lmpio_file fh, char *buf, MPI_Count n, MPI_Status *status) {
  const char *call = "lmpio_file_read_ordered_c";
  lmpio__stats *st = fh->stats;
  long long t0 = st && st->timed ? lmpio__stats_now() : 0;
  MPI_Count bytes;
  int rc = MPI_SUCCESS;
  if (fh->split.kind != LMPIO__SPLIT_NONE)
    rc = lmpio__err(MPI_ERR_OTHER, call, "a split collective is active on file \"%s\"", fh->path);
  rc = lmpio__ordered(fh, buf, n, MPI_BYTE, LMPIO__READ, &bytes, rc, call);
  lmpio__set_status(status, bytes);
  lmpio__stats_call(st, LMPIO__K_ORDERED, LMPIO__READ, t0);
  return rc;
}

enum { F_LEN, F_FIRST, F_LAST, F_ENDSEP, F_EOF, NF };

int lmpio_file_read_records_ordered(lmpio_file fh, int sep, MPI_Count max, char **records, MPI_Count *len,
                                    int *more) {
  const char *call = "lmpio_file_read_records_ordered";
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  int rc = lmpio__pending(MPI_SUCCESS, call);
  if (rc == MPI_SUCCESS && (!records || !len || !more)) rc = lmpio__err(MPI_ERR_ARG, call, "NULL output argument");
  else if (rc == MPI_SUCCESS && (max <= 0 || max > INT_MAX / 2))
    rc = lmpio__err(MPI_ERR_ARG, call, "max %lld is not between 1 and %d bytes", (long long)max, INT_MAX / 2);
  else if (rc == MPI_SUCCESS && (sep < 0 || sep > 255))
    rc = lmpio__err(MPI_ERR_ARG, call, "separator %d is not a byte value (0 to 255)", sep);
  else if (rc == MPI_SUCCESS && fh->view.esize != 1)
    rc = lmpio__err(MPI_ERR_TYPE, call, "the view of file \"%s\" has an etype of %lld bytes: records need one of 1 byte",
                    fh->path, (long long)fh->view.esize);
  if (records) *records = NULL;
  if (len) *len = 0;
  if (more) *more = 0;
  /* The first call makes the state (collective: every rank is here).  The
   * unfinished record of the last call is kept only while the shared
   * pointer is where that call left it: a rank that moved it since (a
   * seek, a new view, its own access) makes every rank drop it. */
  lmpio__records *st = fh->records;
  long long need[2] = {rc == MPI_SUCCESS && !st, st && st->moves != lmpio__shared_moves(fh)};
  lmpio__pipe_enter(fh, call); /* a stream: as every collective call on it, before the agreement */
  lmpio__first f = {.same = (long long[]){rc == MPI_SUCCESS ? sep : 0}, .nsame = 1, .labels = "separators",
                    .max = need, .nmax = 2};
  rc = lmpio__agree_first(fh->comm, rc, &f, call);
  if (rc != MPI_SUCCESS) return rc;
  if (need[1] && st) drop_carry(st);
  if (need[0]) {
    int bad = 0;
    if (!st && !(st = calloc(1, sizeof *st))) bad = 1;
    if (st) {
      fh->records = st;
      st->comm = MPI_COMM_NULL;
      if (MPI_Comm_dup(fh->comm, &st->comm) != MPI_SUCCESS) bad = 1;
    }
    rc = lmpio__agree(fh->comm, bad ? lmpio__err(MPI_ERR_NO_MEM, call, "out of memory") : MPI_SUCCESS, 0, call);
    if (rc != MPI_SUCCESS) return rc;
  }

  /* This rank's chunk; rank 0's starts with the carry (in its buffer). */
  MPI_Count pre = fh->rank == 0 ? st->carry_len : 0;
  char *buf = fh->rank == 0 ? (reserve(st, pre + max) ? st->carry : NULL) : malloc((size_t)max);
  long long fail = buf == NULL;
  rc = lmpio__agree_values(fh->comm, fail ? lmpio__err(MPI_ERR_NO_MEM, call, "out of memory") : MPI_SUCCESS,
                           NULL, 0, NULL, NULL, 0, call);
  char *own = fh->rank == 0 ? NULL : buf; /* (what this call frees) */
  if (rc != MPI_SUCCESS) {
    free(own);
    return rc;
  }
  MPI_Status status;
  rc = read_ordered(fh, buf + pre, max, &status); /* agreed */
  st->moves = lmpio__shared_moves(fh);
  MPI_Count got = 0;
  if (rc == MPI_SUCCESS && (MPI_Get_elements_x(&status, MPI_BYTE, &got) != MPI_SUCCESS || got == MPI_UNDEFINED))
    got = 0;
  if (rc != MPI_SUCCESS) {
    free(own);
    return rc;
  }
  MPI_Count n = pre + got;
  long long mine[NF] = {n, -1, -1, n > 0 && (unsigned char)buf[n - 1] == sep, got < max};
  for (MPI_Count i = pre; i + 1 < n; i++) /* (the carry holds no separator) */
    if ((unsigned char)buf[i] == sep) {
      if (mine[F_FIRST] < 0) mine[F_FIRST] = i + 1;
      mine[F_LAST] = i + 1;
    }
  long long *all = malloc(sizeof(long long) * NF * 3 * (size_t)fh->size);
  fail = all == NULL;
  rc = lmpio__agree(fh->comm, fail ? lmpio__err(MPI_ERR_NO_MEM, call, "out of memory") : MPI_SUCCESS, 0, call);
  if (rc != MPI_SUCCESS) {
    free(own);
    free(all);
    return rc;
  }
  if (MPI_Allgather(mine, NF, MPI_LONG_LONG, all, NF, MPI_LONG_LONG, st->comm) != MPI_SUCCESS) {
    free(own);
    free(all);
    return lmpio__agree(fh->comm, lmpio__err(MPI_ERR_OTHER, call, "MPI_Allgather failed"), 0, call);
  }
  /* Per rank: offset in G, first and last record start in its chunk. */
  long long *off = all + NF * fh->size, *first = off + fh->size, *last = first + fh->size;
  long long total = 0, lastrec = -1;
  int eof = 0, seen = 0, prev_endsep = 0;
  for (int r = 0; r < fh->size; r++) {
    const long long *a = all + NF * r;
    off[r] = total;
    first[r] = last[r] = -1;
    eof |= a[F_EOF] != 0;
    if (a[F_LEN] > 0) {
      int at0 = !seen || prev_endsep; /* a record starts at its first byte */
      first[r] = at0 ? 0 : a[F_FIRST];
      last[r] = a[F_LAST] >= 0 ? a[F_LAST] : first[r];
      if (last[r] >= 0) lastrec = total + last[r];
      seen = 1;
      prev_endsep = (int)a[F_ENDSEP];
    }
    total += a[F_LEN];
  }
  if (seen && prev_endsep) lastrec = total; /* the next record starts after everything */
  long long endc = eof ? total : (lastrec < 0 ? 0 : lastrec); /* complete records: [0, endc) */

  /* Where each rank's bytes go: [o, o + p) to dest (prefix), [o + k, o + e)
   * stays, [o + c, o + len) to the carry. */
  MPI_Count keep_from = 0, keep_to = 0, incoming = 0;
  MPI_Request *reqs = malloc(sizeof(MPI_Request) * (2 * (size_t)fh->size + 2));
  char *out = NULL;
  long long carry_total = eof ? 0 : total - endc;
  int bad = reqs == NULL;
  /* Sizes first: this rank's output and (rank 0) the new carry. */
  long long pieces[3 * 64], *piece = fh->size <= 64 ? pieces : malloc(sizeof(long long) * 3 * (size_t)fh->size);
  if (!piece) bad = 1;
  for (int s = 0; s < fh->size && piece; s++) {
    long long l = all[NF * s + F_LEN], o = off[s];
    long long p = first[s] >= 0 ? first[s] : l;          /* prefix */
    long long pc = endc - o < 0 ? 0 : (endc - o < p ? endc - o : p);
    int dest = -1;
    for (int q = s - 1; q >= 0 && pc > 0; q--)
      if (last[q] >= 0) {
        dest = q;
        break;
      }
    long long cstart = endc > o ? endc - o : 0;           /* carry from here */
    piece[3 * s] = dest;
    piece[3 * s + 1] = pc;
    piece[3 * s + 2] = eof || cstart >= l ? 0 : l - cstart;
    if (dest == fh->rank) incoming += pc;
    if (s == fh->rank && first[s] >= 0 && first[s] < cstart) {
      keep_from = first[s];
      keep_to = cstart < l ? cstart : l;
    }
  }
  MPI_Count outlen = keep_to - keep_from + incoming;
  if (!bad && outlen > 0 && !(out = malloc((size_t)outlen))) bad = 1;
  /* (rank 0's records are copied out first: the new carry may move) */
  if (!bad && keep_to > keep_from) memcpy(out, buf + keep_from, (size_t)(keep_to - keep_from));
  if (!bad && fh->rank == 0 && !reserve(st, carry_total)) bad = 1;
  if (fh->rank == 0) buf = st->carry;
  rc = lmpio__agree(fh->comm, bad ? lmpio__err(MPI_ERR_NO_MEM, call, "out of memory") : MPI_SUCCESS, 0, call);
  if (rc == MPI_SUCCESS) {
    char *carry = fh->rank == 0 ? st->carry : NULL;
    MPI_Count at = keep_to - keep_from, cat = 0;
    int nreq = 0;
    for (int s = 0; s < fh->size; s++) {
      long long dest = piece[3 * s], pc = piece[3 * s + 1], cc = piece[3 * s + 2];
      if (dest == fh->rank && pc > 0) {
        MPI_Irecv(out + at, (int)pc, MPI_BYTE, s, 1, st->comm, &reqs[nreq++]);
        at += pc;
      }
      if (s == fh->rank && pc > 0) MPI_Isend(buf, (int)pc, MPI_BYTE, (int)dest, 1, st->comm, &reqs[nreq++]);
      if (cc > 0) {
        long long l = all[NF * s + F_LEN];
        if (s == 0 && fh->rank == 0) memmove(carry, buf + (l - cc), (size_t)cc); /* (to the front, in place) */
        else if (fh->rank == 0) MPI_Irecv(carry + cat, (int)cc, MPI_BYTE, s, 2, st->comm, &reqs[nreq++]);
        else if (s == fh->rank) MPI_Isend(buf + (l - cc), (int)cc, MPI_BYTE, 0, 2, st->comm, &reqs[nreq++]);
        cat += cc;
      }
    }
    /* (one by one: GCC 12 takes MPICH's MPI_STATUSES_IGNORE for an array
     * of size 0 that MPI_Waitall would write to, and warns) */
    for (int i = 0; i < nreq; i++) MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    if (fh->rank == 0) st->carry_len = carry_total;
    *records = out;
    *len = outlen;
    *more = !(eof && total == 0);
    out = NULL;
  }
  free(out);
  if (piece != pieces) free(piece);
  free(reqs);
  free(all);
  free(own);
  return rc;
}
