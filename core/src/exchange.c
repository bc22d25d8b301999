/* How the agreement's records travel between ranks: every rank's record to
 * every rank (an allgather).  When all ranks of a file's communicator share
 * one node, through a segment of shared memory: each rank publishes its
 * record with a stamp (the exchange's sequence number and the record's
 * length) in the record's first cache line, and reads the others' once their
 * stamps name its own exchange (about 0.14 us an exchange at 2 ranks,
 * against 0.4 us for MPI_Allgather through Open MPI).  Otherwise
 * MPI_Allgather.
 *
 * A record's trailing zeros are not sent: the stamp says how many values
 * came, and the reader fills the rest with zeros (what MPI_Allgather would
 * have given).  Most records of the agreement are mostly zeros (a call's
 * identity and outcome, and often nothing else): with up to 7 values left,
 * the stamp and the record are one line, so a reader waits for one line
 * from each rank (one transfer: about 0.13 us one way at 2 ranks, measured)
 * and not for a line of sequence numbers and then the record's lines behind
 * it.  A longer record's other lines are read once its first line has come
 * (the stamp is stored last, with release), all at once; a two-line
 * record's second line is fetched while its stamp is awaited.
 *
 * Each rank alternates between two record buffers: a rank can be at most one
 * exchange ahead of the slowest (it waits for everyone's record of the
 * current one), so the buffer it writes is never the one another still
 * reads, and a buffer's stamp is that of the exchange before last or of the
 * current one, never a later one.  Every rank makes the same exchanges on a
 * communicator in the same order, as MPI's collectives require; the sequence
 * number is the count of them. */
#include "ground.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE 64
#define MAX_LONGS 64 /* longest record: 512 bytes */
#define MAX_RANKS 64 /* above, a rank reading every record costs more than MPI */
#define HEAD 7       /* values in a record's first line, with its stamp */
#define LEN_BITS 7   /* a stamp: sequence number << LEN_BITS | values sent (0..MAX_LONGS) */

/* One record: its stamp and first 7 values share a line. */
typedef struct {
  _Alignas(LINE) _Atomic long long stamp;
  long long rec[MAX_LONGS];
} record;

/* sleepers: ranks asleep (or about to be) on one of this rank's records;
 * cpu: the processor it last published from.  Their own line, written only
 * by a rank going to sleep or waking, or this rank. */
typedef struct {
  record buf[2];
  _Alignas(LINE) _Atomic int sleepers;
  _Atomic int cpu;
} slot;

typedef struct {
  MPI_Win win;
  slot *slots;          /* NULL: MPI's collectives */
  long long seq;        /* exchanges made */
  int rank, size;
  int off;              /* LMPIO_SHM_AGREEMENT=0 on this rank */
  unsigned spin;        /* turns of pausing before yielding (lmpio__os_spin_turns) */
  int by_cpu;           /* whether the yields depend on where the awaited run (lmpio__os_wait_yields) */
  long cpus;            /* processors of the ranks (lmpio__os_pausing_helps) */
} shm;

/* The segment is made at the attach_at-th exchange on the communicator
 * (every rank reaches it in the same exchange): a file opened for a few
 * calls does not pay for it.  Making it costs about 35-40 us at 2 ranks,
 * each exchange through it saves about 0.2 us: 128 is near where it pays.
 * LMPIO_SHM_AGREEMENT_AT (the tests: the same on every rank) moves it. */
static int attach_at = 128;

static int keyval = MPI_KEYVAL_INVALID;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init_once(void) {
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL) != MPI_SUCCESS)
    keyval = MPI_KEYVAL_INVALID;
  const char *env = getenv("LMPIO_SHM_AGREEMENT_AT");
  if (env && atoi(env) >= 1) attach_at = atoi(env);
}

/* The segment this thread found last: asking MPI for the attribute cost
 * about 145 instructions an exchange (Open MPI's hash table; 33 this way).
 * It holds while no segment has been detached since
 * (detach moves `detached` on before it frees one). */
static _Atomic unsigned detached;
static _Thread_local MPI_Comm last_comm; /* (three variables: cppcheck misreads a thread-local struct) */
static _Thread_local shm *last_shm;
static _Thread_local unsigned last_gen;

static shm *shm_of(MPI_Comm comm) {
  unsigned gen = atomic_load_explicit(&detached, memory_order_acquire);
  if (last_shm && last_comm == comm && last_gen == gen) return last_shm;
  if (keyval == MPI_KEYVAL_INVALID) return NULL;
  shm *s = NULL;
  int flag = 0;
  if (MPI_Comm_get_attr(comm, keyval, &s, &flag) != MPI_SUCCESS || !flag) return NULL;
  if (s) { /* (only a segment: a communicator without one may get one later) */
    last_comm = comm;
    last_shm = s;
    last_gen = gen;
  }
  return s;
}

int lmpio__exchange_attach(MPI_Comm comm) {
  int size, rank;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  if (size == 1 || size > MAX_RANKS) return MPI_SUCCESS;
  pthread_once(&once, init_once);
  if (keyval == MPI_KEYVAL_INVALID || shm_of(comm)) return MPI_SUCCESS; /* (a kept communicator has its own) */
  shm *s = calloc(1, sizeof *s);
  if (!s) return MPI_SUCCESS; /* (a rank without counts nothing: if others have one, their attach hangs) */
  s->rank = rank;
  s->size = size;
  s->spin = lmpio__os_spin_turns(size); /* (every rank of the segment shares this machine) */
  s->by_cpu = lmpio__os_wait_yields(s->spin, 0) != lmpio__os_wait_yields(s->spin, 1);
  s->cpus = lmpio__os_processors();
  /* "0": MPI's collectives (tests compare both).  A rank that asks for it
   * still counts its exchanges and joins the attach, which it turns down
   * for every rank: a rank that did not count would hang the others. */
  const char *env = getenv("LMPIO_SHM_AGREEMENT");
  s->off = env && strcmp(env, "0") == 0;
  if (MPI_Comm_set_attr(comm, keyval, s) != MPI_SUCCESS) free(s);
  return MPI_SUCCESS;
}

/* Collective over comm, at the same exchange on every rank: the segment,
 * when every rank shares this node and every rank could map it. */
static void attach_segment(MPI_Comm comm, shm *s) {
  int on = !s->off, all = 0;
  MPI_Allreduce(&on, &all, 1, MPI_INT, MPI_LAND, comm);
  if (!all) return;
  int nsize = 0;
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Comm_size(node, &nsize);
    MPI_Comm_free(&node);
  }
  /* (every rank on one node: the OR over the ranks of "not all here") */
  int apart = nsize != s->size, any = 0;
  MPI_Allreduce(&apart, &any, 1, MPI_INT, MPI_LOR, comm);
  if (any) return;
  void *base = NULL;
  /* (a line more: the window need not start on one, see below) */
  MPI_Aint bytes = s->rank == 0 ? (MPI_Aint)sizeof(slot) * s->size + LINE : 0;
  /* An MPI that cannot make the window (no osc/sm, say) says so on comm,
   * whose handler is the caller's, often MPI_ERRORS_ARE_FATAL: returned
   * here instead. */
  MPI_Errhandler eh;
  MPI_Comm_get_errhandler(comm, &eh);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int got = MPI_Win_allocate_shared(bytes, LINE, MPI_INFO_NULL, comm, &base, &s->win) == MPI_SUCCESS;
  MPI_Comm_set_errhandler(comm, eh);
  MPI_Errhandler_free(&eh);
  MPI_Allreduce(&got, &all, 1, MPI_INT, MPI_LAND, comm);
  if (!all) {
    if (got) MPI_Win_free(&s->win);
    return; /* MPI's collectives then: slower, not wrong */
  }
  MPI_Aint qsize;
  int disp;
  MPI_Win_shared_query(s->win, 0, &qsize, &disp, &base);
  /* Open MPI's window starts 8 bytes past a line (seen): the records from
   * the next line on.  Every process maps the segment at a page, so the
   * same bytes in each. */
  base = (char *)base + (LINE - (uintptr_t)base % LINE) % LINE;
  if (s->rank == 0) memset(base, 0, sizeof(slot) * (size_t)s->size);
  MPI_Barrier(comm); /* the zeroed slots before anyone publishes */
  s->slots = base;
  s->seq = 0;
}

int lmpio__exchange_shared(MPI_Comm comm) {
  const shm *s = shm_of(comm);
  return s && s->slots;
}

const void *lmpio__exchange_records(MPI_Comm comm) {
  const shm *s = shm_of(comm);
  return s ? s->slots : NULL;
}

void lmpio__exchange_detach(MPI_Comm comm) {
  shm *s = shm_of(comm);
  if (!s) return;
  MPI_Comm_delete_attr(comm, keyval);
  atomic_fetch_add_explicit(&detached, 1, memory_order_acq_rel); /* (every thread's last_shm goes stale) */
  if (s->slots) MPI_Win_free(&s->win); /* collective: every rank made it alike */
  free(s);
}


/* comm's segment, made now if this is the exchange it is made at. */
static shm *ready(MPI_Comm comm) {
  shm *s = shm_of(comm);
  if (s && !s->slots && ++s->seq == attach_at) attach_segment(comm, s);
  return s && s->slots ? s : NULL;
}

/* The 32-bit word of a stamp that changes with every exchange (its low
 * half): what a sleeping rank waits on. */
static const void *stamp_word(const record *rec) {
  return (const char *)&rec->stamp + (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0);
}

/* Sleeps until rank r's record of exchange seq has come (or a while has
 * passed).  Dekker's handshake with the publisher: a sleeper counts itself
 * in r's slot, then looks at the stamp; the publisher stores its stamp,
 * then looks for sleepers; with both orders total (seq_cst), one of the two
 * sees the other, so no wake is lost (and the timeout bounds a mistake). */
static void sleep_on(shm *s, int r, int b, long long seq) {
  slot *sl = &s->slots[r];
  const record *rec = &sl->buf[b];
  atomic_fetch_add(&sl->sleepers, 1);
  long long stamp = atomic_load(&rec->stamp);
  if (stamp >> LEN_BITS != seq) lmpio__os_sleep_on(stamp_word(rec), (unsigned)stamp, 10000);
  atomic_fetch_sub(&sl->sleepers, 1);
}

/* Publishes this rank's record, then takes the others' as their stamps come
 * (in whatever order: at more ranks, a late one does not hold up reading
 * the rest).  Spinning briefly, as MPI's own shared-memory transport does
 * (while the ranks awaited may all be running, lmpio__os_pausing_helps),
 * then giving the processor away: yielding (when a rank awaited last ran
 * on this processor, lmpio__os_wait_yields), then sleeping on the first
 * rank still awaited (lmpio__os_wait_round). */
static void gather(shm *s, const long long *mine, int n, long long *all) {
  long long seq = ++s->seq;
  int b = (int)(seq & 1), sent = n;
  while (sent > 0 && mine[sent - 1] == 0) sent--;
  record *me = &s->slots[s->rank].buf[b];
  /* (the first line last: written at once with its stamp, while a reader
   * may be polling it) */
  if (sent > HEAD) memcpy(me->rec + HEAD, mine + HEAD, sizeof(long long) * (size_t)(sent - HEAD));
  memcpy(me->rec, mine, sizeof(long long) * (size_t)(sent < HEAD ? sent : HEAD));
  atomic_store(&me->stamp, seq << LEN_BITS | sent); /* (seq_cst: before the look for sleepers) */
  slot *own = &s->slots[s->rank];
  if (atomic_load(&own->sleepers) > 0) lmpio__os_wake(stamp_word(me));
  int cpu = s->by_cpu ? lmpio__os_cpu() : -1;
  if (cpu >= 0 && atomic_load_explicit(&own->cpu, memory_order_relaxed) != cpu)
    atomic_store_explicit(&own->cpu, cpu, memory_order_relaxed);
  memcpy(all + (size_t)s->rank * (size_t)n, mine, sizeof(long long) * (size_t)n);
  unsigned long long pending = (s->size == 64 ? ~0ULL : (1ULL << s->size) - 1) & ~(1ULL << s->rank);
  unsigned yields = LMPIO__OS_YIELDS;
  for (unsigned round = 0; pending;) {
    for (int r = 0; r < s->size; r++) {
      if (!(pending >> r & 1)) continue;
      const record *rec = &s->slots[r].buf[b];
      long long stamp = atomic_load_explicit(&rec->stamp, memory_order_acquire);
      if (stamp >> LEN_BITS != seq) {
        /* A record of two lines (the agreement's first of some calls):
         * its second on its way meanwhile, so that it comes with the
         * first, not after it (0.23 -> 0.18 us at 2 ranks, 12 values).
         * Not for longer ones: lines fetched again and again while their
         * writer fills them cost more than they save (64 values, every
         * line: 0.37 -> 0.5 us). */
        if (n > HEAD && n <= HEAD + LINE / 8) __builtin_prefetch((const char *)rec + LINE);
        continue;
      }
      int got = (int)(stamp & ((1 << LEN_BITS) - 1));
      if (got > n) got = n; /* (a caller passing another n: a defect, read as far as both go) */
      long long *out = all + (size_t)r * (size_t)n;
      memcpy(out, rec->rec, sizeof(long long) * (size_t)got);
      memset(out + got, 0, sizeof(long long) * (size_t)(n - got));
      pending &= ~(1ULL << r);
    }
    if (!pending) break;
    /* (with no more ranks than processors the pauses always help: not counted) */
    if (round < s->spin && s->size > s->cpus && !lmpio__os_pausing_helps(__builtin_popcountll(pending), s->cpus))
      round = s->spin; /* (too many awaited to all be running: to the yields) */
    if (round == s->spin && s->by_cpu) { /* (the pauses ran out) */
      int here = lmpio__os_cpu(), near = 0;
      for (int r = 0; r < s->size; r++)
        near |= (pending >> r & 1) && atomic_load_explicit(&s->slots[r].cpu, memory_order_relaxed) == here;
      yields = lmpio__os_wait_yields(s->spin, near);
    }
    if (lmpio__os_wait_round(&round, s->spin, yields)) sleep_on(s, __builtin_ctzll(pending), b, seq);
  }
}

int lmpio__exchange_max(MPI_Comm comm, const long long *mine, int n, long long *max) {
  shm *s = ready(comm);
  if (!s || n > MAX_LONGS) return MPI_Allreduce(mine, max, n, MPI_LONG_LONG, MPI_MAX, comm);
  long long all[MAX_RANKS * MAX_LONGS];
  gather(s, mine, n, all);
  memcpy(max, all, sizeof(long long) * (size_t)n);
  for (int r = 1; r < s->size; r++)
    for (int i = 0; i < n; i++)
      if (all[r * n + i] > max[i]) max[i] = all[r * n + i];
  return MPI_SUCCESS;
}

int lmpio__exchange(MPI_Comm comm, const long long *mine, int n, long long *all) {
  shm *s = ready(comm);
  if (!s || n > MAX_LONGS) {
    int size;
    MPI_Comm_size(comm, &size);
    if (size == 1) {
      memcpy(all, mine, sizeof(long long) * (size_t)n);
      return MPI_SUCCESS;
    }
    return MPI_Allgather(mine, n, MPI_LONG_LONG, all, n, MPI_LONG_LONG, comm);
  }
  gather(s, mine, n, all);
  return MPI_SUCCESS;
}
