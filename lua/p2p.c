/* Point-to-point messages: comm:send, comm:isend, comm:recv, comm:irecv,
 * comm:sendrecv, their requests (metatable "lmpio.msgrequest"), and
 * lmpio.waitall / lmpio.waitany over them mixed with file requests.
 *
 * A message is self-describing: a header (what it is: an array with its
 * type and shape, a string, a serialised value) and the payload.  Up to
 * INLINE bytes, header and payload travel as one MPI message (packed with
 * MPI_Pack, so that a slice is gathered by MPI); a larger message is an
 * announcement (the header, with a sequence number) on the communicator and
 * the payload sent straight from the array's memory, with its own datatype
 * (a slice's elements are gathered by MPI), on the communicator's shadow
 * (lua/comm.c) with the sequence number as its tag: no receive of the
 * script can take it.
 *
 * Every receive is an MPI_Irecv posted when the script calls recv or irecv
 * (into the request's INLINE bytes), so a receive takes part in matching
 * from the moment it is called and MPI itself gives each message to the
 * earliest posted receive that fits it, wildcards included.  A receive into
 * an array the script gives (typed) gets the payload in that array: an
 * announced payload is received into it directly.  The payload of an
 * announced message is received once its announcement has arrived: every
 * wait, test and blocking call of this file progresses every pending
 * receive, so a rank blocked in comm:send still lets a large message to it
 * through.
 *
 * Waiting gives the core away: a bounded number of polls (MPI_Testsome;
 * the bound adapts, see lmpio_lua_pause), then sched_yield until
 * WAIT_YIELD_NS have passed, then sleeps that grow from NAP_MIN_NS to
 * NAP_MAX_NS (see STYLE.md, "Waiting"). */
#include "error.h"
#include "watch.h"
#include "lifetime.h"
#include "datatype.h"
#include "buffer.h"
#include "agree.h"
#include "comm.h"
#include "serial.h"
#include "p2p.h"

#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef lmpio_lua_mreq mreq;
/* User values of a request object. */
enum { UV_DATA = 1, UV_RESULT, UV_COMM, UV_HOLD, UV_INTO, NUV = UV_INTO };

/* Receives posted and not complete, of every lua_State of the process. */
static mreq *pending;

static int finalized(void) {
  int fin = 0;
  MPI_Finalized(&fin);
  return fin;
}

static int tag_ub(void) {
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  return flag && ub ? *ub : 32767;
}

/* A rank argument: nil is lmpio.PROC_NULL (no partner); receives also take
 * lmpio.ANY_SOURCE. */
static int checkpeer(lua_State *L, int arg, MPI_Comm comm, int receiving) {
  if (lua_isnoneornil(L, arg)) return MPI_PROC_NULL;
  lua_Integer r = lmpio_lua_checkinteger(L, arg);
  int size = lmpio_lua_commsize(comm);
  if (r == MPI_PROC_NULL || (receiving && r == MPI_ANY_SOURCE)) return (int)r;
  if (r < 0 || r >= size)
    lmpio_lua_argerror(L, arg, lua_pushfstring(L, "%I is not a rank of the communicator (0 to %d), lmpio.PROC_NULL%s", r,
                                          size - 1, receiving ? " or lmpio.ANY_SOURCE" : ""));
  return (int)r;
}

static int checktag(lua_State *L, int arg, int receiving) {
  if (lua_isnoneornil(L, arg)) return receiving ? MPI_ANY_TAG : 0;
  lua_Integer t = lmpio_lua_checkinteger(L, arg);
  if (receiving && t == MPI_ANY_TAG) return MPI_ANY_TAG;
  if (t < 0 || t > tag_ub())
    lmpio_lua_argerror(L, arg, lua_pushfstring(L, "a tag is from 0 to %d%s", tag_ub(), receiving ? ", or lmpio.ANY_TAG" : ""));
  return (int)t;
}

/* ---- waiting -------------------------------------------------------------- */

/* The spin is adaptive, as glibc's adaptive mutex: a wait polls up to
 * `spin` times before it yields; a wait that ended while polling lets the
 * next ones poll a little longer (the peer was running: its answer came
 * on another core), one that had to yield halves it (the peer needed this
 * core, or the machine is loaded: polling only delays it). */
enum { SPIN_MIN = 2, SPIN_MAX = 512 };
static _Thread_local unsigned spin = 64;
#define WAIT_YIELD_NS 20000000L /* 20 ms of yielding before the first sleep */
#define NAP_MIN_NS 20000L
#define NAP_MAX_NS 500000L

typedef struct {
  unsigned polls;
  struct timespec start;
  long nap;
  lmpio_watch_loop watch; /* a long wait reports itself (lmpio_watch_tick) */
} waiter;

static long elapsed_ns(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (long)(b.tv_sec - a->tv_sec) * 1000000000L + (b.tv_nsec - a->tv_nsec);
}

/* Past the polls, the wait checks whether its hang report is due: it
 * reports itself (its loop runs Lua between polls, where no other thread
 * may read the script's line), naming the line of the script running on L. */
static void tick(waiter *v, lua_State *L, const char *call) {
  lua_State *saved = lmpio_lua_caller;
  lmpio_lua_caller = L;
  lmpio_watch_tick(&v->watch, call);
  lmpio_lua_caller = saved;
}

void lmpio_lua_pause(lmpio_lua_waiter *w, lua_State *L, const char *call) {
  waiter *v = (waiter *)w;
  if (++v->polls <= spin) return;
  if (v->polls == spin + 1) {
    clock_gettime(CLOCK_MONOTONIC, &v->start);
    v->nap = NAP_MIN_NS;
  }
  tick(v, L, call);
  if (elapsed_ns(&v->start) < WAIT_YIELD_NS) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, v->nap};
  nanosleep(&ts, NULL);
  v->nap = v->nap * 2 < NAP_MAX_NS ? v->nap * 2 : NAP_MAX_NS;
}

void lmpio_lua_waited(const lmpio_lua_waiter *w) {
  const waiter *v = (const waiter *)w;
  if (v->polls == 0) return; /* done at once: says nothing */
  if (v->polls <= spin) spin = spin + spin / 4 + 1 < SPIN_MAX ? spin + spin / 4 + 1 : SPIN_MAX;
  else spin = spin / 2 > SPIN_MIN ? spin / 2 : SPIN_MIN;
}

_Static_assert(sizeof(waiter) <= sizeof(lmpio_lua_waiter), "lmpio_lua_waiter holds a waiter");

/* ---- sending -------------------------------------------------------------- */

/* What the value at idx sends: its header into h, its payload in *pl
 * (memory, count, MPI datatype); pushes what keeps the payload alive (the
 * value, or its serialised bytes).  Returns the array, if it is one. */
static lmpio_lua_buffer *outgoing(lua_State *L, int idx, msghdr *h, lmpio_lua_span *pl) {
  int code;
  memset(h, 0, sizeof *h);
  h->magic = MAGIC;
  h->seq = -1;
  lmpio_lua_buffer *a = lmpio_lua_toarray(L, idx, &code);
  if (a) {
    lmpio_lua_checkheld(L, a, 0);
    lmpio_lua_spanof(L, idx, a, pl);
    h->kind = K_ARRAY;
    h->code = code;
    h->ndim = a->ndim;
    h->forder = a->forder;
    for (int k = 0; k < a->ndim; k++) h->dims[k] = (uint64_t)a->dims[k];
    h->count = (uint64_t)a->count;
    h->nbytes = (uint64_t)(a->count * a->esize);
    lua_pushvalue(L, idx);
    return a;
  }
  size_t n;
  if (lua_type(L, idx) == LUA_TSTRING) {
    h->kind = K_STRING;
    pl->ptr = (void *)lua_tolstring(L, idx, &n);
    lua_pushvalue(L, idx);
  } else {
    h->kind = K_VALUE;
    pl->ptr = lmpio_lua_serialise(L, idx, idx, &n);
  }
  if (n > INT_MAX) lmpio_lua_argerror(L, idx, "more than 2 GiB in one message");
  pl->count = (int)n;
  pl->type = MPI_BYTE;
  h->count = h->nbytes = (uint64_t)n;
  return NULL;
}

static void let_go(mreq *r) {
  lmpio_lua_unhold(r->hold);
  r->hold = NULL;
}

/* Starts sending the value at idx into r (its MPI requests): inline, or an
 * announcement and the payload.  Pushes the keeper of the payload. */
static lmpio_lua_buffer *startsend(lua_State *L, int idx, const lmpio_lua_comm *c, unsigned *seq, int dest, int tag,
                                   mreq *r) {
  msghdr h;
  lmpio_lua_span pl = {0};
  lmpio_lua_buffer *a = outgoing(L, idx, &h, &pl);
  r->sending = 1;
  r->comm = c->comm;
  r->shadow = c->shadow;
  r->req = r->req2 = MPI_REQUEST_NULL;
  r->state = ST_DONE;
  if (dest == MPI_PROC_NULL) return a;
  int pos = 0, rc;
  void *mem = pl.ptr ? pl.ptr : (void *)&h;
  if (h.nbytes + HDR + SLACK <= INLINE) {
    rc = MPI_Pack(&h, (int)HDR, MPI_BYTE, r->buf, INLINE, &pos, c->comm);
    if (rc == MPI_SUCCESS && pl.count) rc = MPI_Pack(mem, pl.count, pl.type, r->buf, INLINE, &pos, c->comm);
    lmpio_lua_checkmpi(L, rc, "MPI_Pack");
    lmpio_lua_checkmpi(L, MPI_Isend(r->buf, pos, MPI_PACKED, dest, tag, c->comm, &r->req), "MPI_Isend");
  } else {
    h.seq = (int)(*seq % ((unsigned)tag_ub() + 1u));
    (*seq)++;
    lmpio_lua_checkmpi(L, MPI_Pack(&h, (int)HDR, MPI_BYTE, r->buf, INLINE, &pos, c->comm), "MPI_Pack");
    lmpio_lua_checkmpi(L, MPI_Isend(r->buf, pos, MPI_PACKED, dest, tag, c->comm, &r->req), "MPI_Isend");
    rc = MPI_Isend(mem, pl.count, pl.type, dest, h.seq, c->shadow, &r->req2);
    if (rc != MPI_SUCCESS) {
      MPI_Wait(&r->req, MPI_STATUS_IGNORE);
      lmpio_lua_checkmpi(L, rc, "MPI_Isend");
    }
  }
  r->state = ST_SENDING;
  return a;
}

/* ---- receiving ------------------------------------------------------------ */

/* Pushes the receive r (anchored while pending). */
static void pushpending(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, PENDING_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, PENDING_KEY);
  }
}

static void unlist(lua_State *L, mreq *r) {
  if (!r->pprev) return;
  *r->pprev = r->next;
  if (r->next) r->next->pprev = r->pprev;
  r->next = NULL;
  r->pprev = NULL;
  if (!L) return;
  pushpending(L);
  lua_pushnil(L);
  lua_rawsetp(L, -2, r);
  lua_pop(L, 1);
}

/* A failure of the receive r found while progressing it: raised by its wait. */
static void fail(mreq *r, int cls, const char *msg) {
  if (!r->err) {
    r->err = cls;
    snprintf(r->errmsg, sizeof r->errmsg, "%s", msg);
  }
}

static void failmpi(mreq *r, int rc, const char *what) {
  char s[MPI_MAX_ERROR_STRING] = "";
  int len = 0, cls = MPI_ERR_OTHER;
  MPI_Error_class(rc, &cls);
  MPI_Error_string(rc, s, &len);
  char m[MPI_MAX_ERROR_STRING + 64];
  snprintf(m, sizeof m, "%s: %s", what, s);
  fail(r, cls, m);
}

/* The receive is complete (with its result, or its failure). */
static void finish(lua_State *L, mreq *r) {
  r->state = ST_DONE;
  unlist(L, r);
}

/* Why an array's message (header h) cannot land in the given array b, or NULL. */
static const char *unfit(lua_State *L, const msghdr *h, const lmpio_lua_buffer *b) {
  if (h->kind == K_VALUE) return "a value (not an array or a string) cannot be received into an array";
  if (h->kind == K_STRING) {
    if (b->esize != 1) return lua_pushfstring(L, "a string cannot be received into an array of %s",
                                              lmpio_lua_typename(b->type) ? lmpio_lua_typename(b->type) : "?");
  } else if (lmpio_lua_codetype(h->code) != b->type) {
    const char *got = lmpio_lua_typename(lmpio_lua_codetype(h->code));
    const char *want = lmpio_lua_typename(b->type);
    return lua_pushfstring(L, "an array of %s cannot be received into an array of %s", got ? got : "?",
                           want ? want : "?");
  }
  if (h->count > b->count)
    return lua_pushfstring(L, "a message of %I elements does not fit an array of %I", (lua_Integer)h->count,
                           (lua_Integer)b->count);
  if (b->strided && h->count != b->count)
    return lua_pushfstring(L, "a message of %I elements into a slice of %I (a slice receives all its elements)",
                           (lua_Integer)h->count, (lua_Integer)b->count);
  return NULL;
}

/* The memory and datatype that receive the payload of h into b. */
static void intospan(lua_State *L, int bidx, lmpio_lua_buffer *b, const msghdr *h, lmpio_lua_span *s) {
  lmpio_lua_spanof(L, bidx, b, s);
  if (!b->strided) s->count = (int)h->count;
}

/* Builds the result of the receive r (at ridx) from its header and, for an
 * inline message, the bytes after it in r->buf (got bytes, from pos);
 * for an announced one, posts the payload's receive.  Lua errors may be
 * raised (memory); MPI failures are recorded in r. */
static void arrived(lua_State *L, int ridx, mreq *r, int got, int pos) {
  msghdr *h = &r->hdr;
  int large = h->seq >= 0;
  if (h->magic != MAGIC || h->ndim < 0 || h->ndim > LMPIO_LUA_MAXDIM || h->kind < K_VALUE || h->kind > K_ARRAY ||
      h->count > (uint64_t)INT_MAX || h->nbytes > (uint64_t)INT_MAX) {
    fail(r, MPI_ERR_OTHER, "received a message that lmpio did not send");
    finish(L, r);
    return;
  }
  lmpio_lua_span s = {0};
  int rc;
  if (r->into) {
    int top = lua_gettop(L);
    lua_getiuservalue(L, ridx, UV_INTO);
    lmpio_lua_buffer *b = lmpio_lua_tobuffer(L, -1);
    const char *why = unfit(L, h, b); /* may push its message */
    if (why) {
      char m[sizeof r->errmsg];
      snprintf(m, sizeof m, "from rank %d, tag %d: %s", r->rsrc, r->rtag, why);
      fail(r, h->count > b->count ? MPI_ERR_COUNT : MPI_ERR_TYPE, m); /* (the core names no MPI_ERR_OTHER) */
      lua_settop(L, top);
      if (!large) {
        finish(L, r);
        return;
      }
      /* the payload is received all the same (into scratch bytes), or its
       * sender would wait for ever */
      lmpio_lua_buffer *scratch = lmpio_lua_newbuffer(L, MPI_BYTE, (size_t)h->nbytes);
      lua_setiuservalue(L, ridx, UV_DATA);
      s.ptr = scratch->data ? (void *)scratch->data : (void *)r->buf;
      s.count = (int)h->nbytes;
      s.type = MPI_BYTE;
    } else {
      intospan(L, -1, b, h, &s);
      lua_settop(L, top); /* the memory is kept alive by UV_INTO */
      r->n = (lua_Integer)h->count;
    }
  } else if (h->kind == K_ARRAY) {
    MPI_Datatype t = lmpio_lua_codetype(h->code);
    if (t == MPI_DATATYPE_NULL) {
      fail(r, MPI_ERR_TYPE, "received an array of an unknown type");
      finish(L, r);
      return;
    }
    lmpio_lua_buffer *a = lmpio_lua_newbuffer(L, t, (size_t)h->count);
    size_t total = 1;
    for (int k = 0; k < h->ndim; k++) total *= (size_t)h->dims[k];
    if (h->ndim > 0 && total == a->count) {
      a->ndim = h->ndim;
      a->forder = h->forder != 0;
      for (int k = 0; k < h->ndim; k++) a->dims[k] = (size_t)h->dims[k];
    }
    s.ptr = a->data ? (void *)a->data : (void *)r->buf;
    s.count = (int)h->count;
    s.type = t;
    lua_setiuservalue(L, ridx, UV_DATA);
  } else { /* bytes: a string's or a serialised value's, in scratch memory */
    lmpio_lua_buffer *bytes = lmpio_lua_newbuffer(L, MPI_BYTE, (size_t)h->nbytes);
    s.ptr = bytes->data ? (void *)bytes->data : (void *)r->buf;
    s.count = (int)h->nbytes;
    s.type = MPI_BYTE;
    lua_setiuservalue(L, ridx, UV_DATA);
  }
  if (large) {
    rc = MPI_Irecv(s.ptr, s.count, s.type, r->rsrc, h->seq, r->shadow, &r->req);
    if (rc != MPI_SUCCESS) {
      failmpi(r, rc, "MPI_Irecv");
      finish(L, r);
      return;
    }
    r->state = ST_PAYLOAD;
    return;
  }
  if (!r->err && s.count) {
    rc = MPI_Unpack(r->buf, got, &pos, s.ptr, s.count, s.type, r->comm);
    if (rc != MPI_SUCCESS) failmpi(r, rc, "MPI_Unpack");
  }
  r->state = ST_PAYLOAD; /* done below: the bytes become the value */
}

/* The payload of r (at ridx) is in: bytes become the string or the value. */
static void landed(lua_State *L, int ridx, mreq *r) {
  if (!r->err && !r->into && r->hdr.kind != K_ARRAY) {
    lua_getiuservalue(L, ridx, UV_DATA);
    const lmpio_lua_buffer *bytes = lmpio_lua_tobuffer(L, -1);
    const char *p = bytes && bytes->data ? (const char *)bytes->data : "";
    if (r->hdr.kind == K_STRING) lua_pushlstring(L, p, (size_t)r->hdr.nbytes);
    else lmpio_lua_deserialise(L, (const unsigned char *)p, (size_t)r->hdr.nbytes);
    lua_setiuservalue(L, ridx, UV_RESULT);
    lua_pop(L, 1);
  } else if (!r->err && !r->into) {
    lua_getiuservalue(L, ridx, UV_DATA);
    lua_setiuservalue(L, ridx, UV_RESULT);
  }
  lua_pushnil(L);
  lua_setiuservalue(L, ridx, UV_DATA);
  finish(L, r);
}

/* One MPI request of r completed (which: 1 its req, 2 its req2), with
 * status st: moves r on. */
static void advance(lua_State *L, mreq *r, int which, const MPI_Status *st) {
  if (r->sending) {
    if (which == 1) r->req = MPI_REQUEST_NULL;
    else r->req2 = MPI_REQUEST_NULL;
    if (r->req == MPI_REQUEST_NULL && r->req2 == MPI_REQUEST_NULL) {
      r->state = ST_DONE;
      let_go(r);
    }
    return;
  }
  r->req = MPI_REQUEST_NULL;
  pushpending(L);
  lua_rawgetp(L, -1, r); /* the request's object */
  int ridx = lua_gettop(L);
  if (r->state == ST_POSTED) {
    int got = 0, pos = 0;
    r->rsrc = st->MPI_SOURCE;
    r->rtag = st->MPI_TAG;
    MPI_Get_count(st, MPI_PACKED, &got);
    memset(&r->hdr, 0, HDR);
    if (got == MPI_UNDEFINED || got < (int)HDR ||
        MPI_Unpack(r->buf, got, &pos, &r->hdr, (int)HDR, MPI_BYTE, r->comm) != MPI_SUCCESS)
      r->hdr.magic = 0;
    arrived(L, ridx, r, got, pos);
    if (r->state == ST_PAYLOAD && r->req == MPI_REQUEST_NULL) landed(L, ridx, r);
  } else if (r->state == ST_PAYLOAD) {
    if (r->into && !r->err) {
      int n = 0;
      if (MPI_Get_elements(st, MPI_BYTE, &n) == MPI_SUCCESS && n != MPI_UNDEFINED && r->hdr.count)
        r->n = (lua_Integer)((uint64_t)n / (r->hdr.nbytes / r->hdr.count));
    }
    landed(L, ridx, r);
  }
  lua_pop(L, 2);
}

/* Posts the receive of src and tag on c into a new request, pushed; into:
 * the stack index of an array to receive into, or 0. */
#define CACHE_KEY "lmpio.p2pcache" /* registry: the request objects blocking calls reuse */
enum { CACHE_RECV = 1, CACHE_SEND, CACHE_STALE };

/* Pushes the cached object of slot (a receive request, or a send's scratch)
 * when it is idle, else a new one that becomes the cached one: a blocking
 * call allocates nothing in the common case.  One that a failed call left
 * in progress stays referenced (the stale list) until MPI is done with it. */
static mreq *cached(lua_State *L, int slot) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, CACHE_KEY) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 3, 0);
    lua_newtable(L);
    lua_rawseti(L, -2, CACHE_STALE);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, CACHE_KEY);
  }
  mreq *r = lua_rawgeti(L, -1, slot) == LUA_TUSERDATA ? lua_touserdata(L, -1) : NULL;
  if (r && r->state == ST_DONE && !r->pprev && r->req == MPI_REQUEST_NULL && r->req2 == MPI_REQUEST_NULL) {
    lua_remove(L, -2);
    return r;
  }
  if (r) { /* busy: kept until it completes */
    lua_rawgeti(L, -2, CACHE_STALE);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  r = lua_newuserdatauv(L, sizeof *r, slot == CACHE_RECV ? NUV : 0);
  if (slot == CACHE_RECV) luaL_setmetatable(L, LMPIO_LUA_MSGREQUEST);
  lua_pushvalue(L, -1);
  lua_rawseti(L, -3, slot);
  lua_remove(L, -2);
  memset(r, 0, offsetof(mreq, buf));
  r->req = r->req2 = MPI_REQUEST_NULL;
  return r;
}

/* The cached receive at ridx lets go of what it referenced. */
static void idle(lua_State *L, int ridx) {
  for (int uv = 1; uv <= NUV; uv++) {
    lua_pushnil(L);
    lua_setiuservalue(L, ridx, uv);
  }
}

/* Sets up the receive r (at the top, a new request, or the cached one) of
 * src and tag on c and posts it; into: the stack index of an array to
 * receive into, or 0. */
static void initrecv(lua_State *L, int commidx, mreq *r, const lmpio_lua_comm *c, int src, int tag, int into) {
  commidx = lua_absindex(L, commidx);
  memset(r, 0, offsetof(mreq, buf));
  r->req = r->req2 = MPI_REQUEST_NULL;
  r->comm = c->comm;
  r->shadow = c->shadow;
  r->src = src;
  r->tag = tag;
  r->owner = lmpio_lua_owner(L);
  r->state = ST_DONE;
  r->req = r->req2 = MPI_REQUEST_NULL;
  lua_pushvalue(L, commidx);
  lua_setiuservalue(L, -2, UV_COMM);
  if (into) {
    r->into = 1;
    lua_pushvalue(L, into);
    lua_setiuservalue(L, -2, UV_INTO);
  }
  if (src == MPI_PROC_NULL) { /* no message: nil from PROC_NULL, as MPI's status says */
    r->rsrc = MPI_PROC_NULL;
    r->rtag = MPI_ANY_TAG;
    return;
  }
  lmpio_lua_checkmpi(L, MPI_Irecv(r->buf, INLINE, MPI_PACKED, src, tag, c->comm, &r->req), "MPI_Irecv");
  r->state = ST_POSTED;
  pushpending(L);
  lua_pushvalue(L, -2);
  lua_rawsetp(L, -2, r);
  lua_pop(L, 1);
  r->next = pending;
  if (pending) pending->pprev = &r->next;
  r->pprev = &pending;
  pending = r;
}

/* Pushes a new request of a receive, posted (see initrecv). */
static mreq *postrecv(lua_State *L, int commidx, const lmpio_lua_comm *c, int src, int tag, int into) {
  commidx = lua_absindex(L, commidx);
  mreq *r = lua_newuserdatauv(L, sizeof *r, NUV);
  luaL_setmetatable(L, LMPIO_LUA_MSGREQUEST);
  initrecv(L, commidx, r, c, src, tag, into);
  return r;
}

/* ---- progress ------------------------------------------------------------- */

static int isdone(const mreq *r) { return r->state == ST_DONE; }

enum { NSMALL = 32 };

/* Progresses the n requests t (and every other pending receive of this
 * lua_State whose announcement may arrive) until all of them (all) or one
 * of them is complete, waiting (the call that waits, named in its hang
 * report) or not (NULL).  Returns the index of a complete one (any), 0 (all
 * done), or -1 (not waiting: not yet). */
int lmpio_lua_p2p_progress(lua_State *L, mreq *const *t, int n, int all, const char *waiting) {
  void *owner = lmpio_lua_owner(L);
  lmpio_lua_waiter w = {0};
  for (;;) {
    int ndone = 0, first = -1;
    for (int i = 0; i < n; i++)
      if (isdone(t[i])) {
        ndone++;
        if (first < 0) first = i;
      }
    if (all ? ndone == n : first >= 0) {
      lmpio_lua_waited(&w);
      return all ? 0 : first;
    }
    int cap = 2 * n;
    for (const mreq *p = pending; p; p = p->next) cap++;
    MPI_Request small[NSMALL];
    mreq *whose_small[NSMALL];
    int which_small[NSMALL], idx_small[NSMALL];
    MPI_Status st_small[NSMALL];
    MPI_Request *reqs = small;
    mreq **whose = whose_small;
    int *which = which_small, *idx = idx_small;
    MPI_Status *sts = st_small;
    int top = lua_gettop(L);
    if (cap > NSMALL) {
      size_t per = sizeof *reqs + sizeof *whose + 2 * sizeof(int) + sizeof *sts;
      unsigned char *m = lua_newuserdatauv(L, (size_t)cap * per, 0);
      sts = (MPI_Status *)m;
      reqs = (MPI_Request *)(sts + cap);
      whose = (mreq **)(reqs + cap);
      which = (int *)(whose + cap);
      idx = which + cap;
    }
    int k = 0;
    for (int i = 0; i < n; i++) {
      if (t[i]->req != MPI_REQUEST_NULL) whose[k] = t[i], which[k] = 1, reqs[k++] = t[i]->req;
      if (t[i]->req2 != MPI_REQUEST_NULL) whose[k] = t[i], which[k] = 2, reqs[k++] = t[i]->req2;
    }
    for (mreq *p = pending; p && k < cap; p = p->next) {
      if (p->owner != owner || p->state != ST_POSTED || p->req == MPI_REQUEST_NULL) continue;
      int target = 0;
      for (int i = 0; i < n && !target; i++) target = t[i] == p;
      if (!target) whose[k] = p, which[k] = 1, reqs[k++] = p->req;
    }
    int out = 0;
    int rc = k ? MPI_Testsome(k, reqs, &out, idx, sts) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
      lua_settop(L, top);
      lmpio_lua_checkmpi(L, rc, "MPI_Testsome");
    }
    if (out == MPI_UNDEFINED) out = 0;
    for (int j = 0; j < out; j++) { /* the requests done are MPI_REQUEST_NULL now */
      mreq *p = whose[idx[j]];
      if (rc == MPI_ERR_IN_STATUS && sts[j].MPI_ERROR != MPI_SUCCESS) {
        if (which[idx[j]] == 1) p->req = MPI_REQUEST_NULL;
        else p->req2 = MPI_REQUEST_NULL;
        failmpi(p, sts[j].MPI_ERROR, p->sending ? "MPI_Isend" : "MPI_Irecv");
        if (p->sending) {
          if (p->req != MPI_REQUEST_NULL) MPI_Wait(&p->req, MPI_STATUS_IGNORE);
          if (p->req2 != MPI_REQUEST_NULL) MPI_Wait(&p->req2, MPI_STATUS_IGNORE);
          p->state = ST_DONE;
          let_go(p);
        } else {
          finish(L, p);
        }
        continue;
      }
      advance(L, p, which[idx[j]], &sts[j]);
    }
    lua_settop(L, top);
    if (k == 0 && !out) { /* nothing left to wait for: the targets are done or failed */
      for (int i = 0; i < n; i++)
        if (!isdone(t[i]) && t[i]->req == MPI_REQUEST_NULL && t[i]->req2 == MPI_REQUEST_NULL) t[i]->state = ST_DONE;
      continue;
    }
    if (out) continue; /* something moved: poll again at once */
    if (!waiting) return -1;
    lmpio_lua_pause(&w, L, waiting);
  }
}

/* Whether a pending receive of this lua_State waits for an announcement. */
static int others_pending(lua_State *L) {
  void *owner = lmpio_lua_owner(L);
  for (const mreq *p = pending; p; p = p->next)
    if (p->owner == owner && p->state == ST_POSTED) return 1;
  return 0;
}

/* Pushes what a completed request gives: nothing for a send; for a
 * receive the value, its source and tag (and the elements received into
 * an array given); raises its failure. */
int lmpio_lua_p2p_results(lua_State *L, int ridx, mreq *r) {
  if (r->err) {
    int cls = r->err;
    r->err = 0; /* raised once; waiting again returns nothing */
    r->into = 0;
    return lmpio_lua_raise(L, cls, lua_pushstring(L, r->errmsg));
  }
  if (r->sending) return 0;
  lua_getiuservalue(L, ridx, r->into ? UV_INTO : UV_RESULT);
  lua_pushinteger(L, r->rsrc);
  lua_pushinteger(L, r->rtag);
  if (!r->into) return 3;
  lua_pushinteger(L, r->rsrc == MPI_PROC_NULL ? 0 : r->n);
  return 4;
}

/* The array at idx to receive into, checked (or 0 when idx holds nil). */
static int checkinto(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return 0;
  int code;
  lmpio_lua_buffer *b = lmpio_lua_toarray(L, idx, &code);
  if (!b) lmpio_lua_typeerror(L, idx, "array or slice to receive into");
  if (b->readonly) lmpio_lua_argerror(L, idx, "cannot receive into a read-only array");
  lmpio_lua_checkheld(L, b, 1);
  return lua_absindex(L, idx);
}

/* ---- methods ---------------------------------------------------------------- */

/***
Sends a value to one rank (`MPI_Isend`, waited for).
An array travels as it is, straight from its memory (a slice's elements
gathered by MPI, with the slice's datatype), and arrives as an array of
the same type and shape, or in the array `comm:recv` gives; a string
arrives as the same bytes; the values `comm:bcast` sends (nil, booleans,
numbers, tables of them) arrive as copies.  Returns when the message is on
its way (a message above 4 KiB: when the receiver took it); while it
waits, this rank's own pending receives go on matching (a send to oneself
completes when a receive for it was posted with `comm:irecv`).
@function comm:send
@param x the value: an array or slice, a string, or a value
@param dest the rank to send to; nil or `lmpio.PROC_NULL`: nobody (nothing
  is sent)
@param[opt=0] tag a non-negative integer the receiver can select on
@raise when dest or tag is out of range or x cannot be sent (functions,
  userdata other than arrays, records)
@usage comm:send(lmpio.array(lmpio.DOUBLE, {1, 2, 3}), 1)   -- on rank 0
local a = comm:recv(0)                                   -- on rank 1
*/
static int c_send(lua_State *L) {
  const lmpio_lua_comm *c = lmpio_lua_checklcomm(L, 1);
  lmpio_lua_checkany(L, 2);
  int dest = checkpeer(L, 3, c->comm, 0), tag = checktag(L, 4, 0);
  lua_settop(L, 4);
  mreq *r = cached(L, CACHE_SEND); /* 5: the send's scratch */
  memset(r, 0, offsetof(mreq, buf));
  lmpio_lua_comm *mc = lmpio_lua_checklcomm(L, 1);
  startsend(L, 2, mc, &mc->seq, dest, tag, r);
  if (r->state == ST_DONE) return 0;
  if (r->req2 == MPI_REQUEST_NULL && !others_pending(L)) { /* nothing else to move meanwhile */
    lmpio_lua_waiter w = {0};
    int flag = 0;
    for (;;) {
      lmpio_lua_checkmpi(L, MPI_Test(&r->req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
      if (flag) {
        r->state = ST_DONE;
        lmpio_lua_waited(&w);
        return 0;
      }
      lmpio_lua_pause(&w, L, "send");
    }
  }
  mreq *t[1] = {r};
  lmpio_lua_p2p_progress(L, t, 1, 1, "send");
  if (r->err) return lmpio_lua_raise(L, r->err, lua_pushstring(L, r->errmsg));
  return 0;
}

/***
Sends a value without waiting (`MPI_Isend`): the request's `wait` (or a
`test` that returns true) completes it.
The value is the message as `comm:send` sends it; an array's memory is
sent from directly, so until the request completes the array is the
call's, as for a file's `iwrite`: writing it (`a[i] = v`, `a:fill`,
reading a file or a `bcast` into it, through any view of the same memory)
raises "array is held by a pending isend; wait for its request first";
reading it, or sending it again, is fine.  The hold ends when `wait`, a
`test` that returns true, `lmpio.waitall` or `lmpio.waitany` completes the
request, or when the request is collected.  The request keeps the value
alive until then.
@function comm:isend
@param x the value
@param dest the rank to send to, nil or `lmpio.PROC_NULL` (nothing is
  sent, nothing held)
@param[opt=0] tag as for `comm:send`
@return a @{msgrequest}
@raise as `comm:send`
@usage local req = comm:isend(a, right)
-- a[1] = 0 here would raise: a is held until the send completes
local halo = comm:recv(left)
req:wait()
a[1] = halo[1]
*/
static int c_isend(lua_State *L) {
  lmpio_lua_comm *c = lmpio_lua_checklcomm(L, 1);
  lmpio_lua_checkany(L, 2);
  int dest = checkpeer(L, 3, c->comm, 0), tag = checktag(L, 4, 0);
  lua_settop(L, 4);
  mreq *r = lua_newuserdatauv(L, sizeof *r, NUV); /* 5 */
  memset(r, 0, offsetof(mreq, buf));
  r->req = r->req2 = MPI_REQUEST_NULL;
  r->sending = 1;
  r->owner = lmpio_lua_owner(L);
  luaL_setmetatable(L, LMPIO_LUA_MSGREQUEST);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, 5, UV_COMM);
  lmpio_lua_buffer *a = startsend(L, 2, c, &c->seq, dest, tag, r); /* 6: the keeper */
  lua_setiuservalue(L, 5, UV_DATA);
  if (a && r->state != ST_DONE) {
    lmpio_lua_mem m = {0};
    m.buf = a;
    r->hold = lmpio_lua_hold_push(L, 2, &m, 0, "isend", 0, &r->req);
    lua_setiuservalue(L, 5, UV_HOLD);
  }
  lua_settop(L, 5);
  return 1;
}

/***
Receives a value from one rank (`MPI_Irecv`, waited for).
What arrives is what was sent with `comm:send`, `comm:isend` or
`comm:sendrecv`: without `into`, a new array of the sender's type and
shape (received straight into its memory), a string, or a value; with
`into`, an array or slice of the sender's element type (a string: of
bytes or chars) with room for the elements sent, received straight into
its memory (a slice: scattered by MPI), and returned.  Messages from one
rank with one tag arrive in the order they were sent; a message goes to
the earliest posted receive that fits it (`comm:irecv`s posted before
included).
@function comm:recv
@param src the rank to receive from, `lmpio.ANY_SOURCE`, or nil
  (`lmpio.PROC_NULL`: no message, nil is returned at once)
@param[opt] tag the tag to select (default `lmpio.ANY_TAG`: any)
@param[opt] into an array or slice to receive into
@return the value (the array `into` when given)
@return the rank it came from
@return its tag
@return with `into`: the number of elements received
@raise when src or tag is out of range, the message was not sent by lmpio,
  or does not fit `into` (`MPI_ERR_COUNT` when it has more elements,
  `MPI_ERR_TYPE` when they are of another type)
@usage local x, from = comm:recv(lmpio.ANY_SOURCE)
comm:recv(left, 0, u:slice({2, -2}, 1))   -- a ghost column, in place
*/
static int c_recv(lua_State *L) {
  const lmpio_lua_comm *c = lmpio_lua_checklcomm(L, 1);
  int src = checkpeer(L, 2, c->comm, 1), tag = checktag(L, 3, 1);
  int into = checkinto(L, 4);
  lua_settop(L, 4);
  mreq *r = cached(L, CACHE_RECV); /* 5 */
  initrecv(L, 1, r, c, src, tag, into);
  mreq *t[1] = {r};
  lmpio_lua_p2p_progress(L, t, 1, 1, "recv");
  int n = lmpio_lua_p2p_results(L, 5, r);
  idle(L, 5);
  return n;
}

/***
Starts receiving a value (`MPI_Irecv`): the request's `wait` gives it.
The receive is posted at once: from this call on it takes part in
matching, so a blocking `comm:send` of any size on another rank meets it,
and a message goes to the earliest posted receive that fits it (a
wildcard receive posted after a specific one takes the messages the
specific one does not fit).  With `into`, the message lands in that array
or slice (see `comm:recv`), which is the call's until the request
completes.
@function comm:irecv
@param src the rank to receive from, `lmpio.ANY_SOURCE`, or nil
  (`lmpio.PROC_NULL`)
@param[opt] tag as for `comm:recv`
@param[opt] into an array or slice to receive into
@return a @{msgrequest} whose `wait` returns what `comm:recv` returns
@raise as `comm:recv`
@usage local left, right = comm:irecv(l), comm:irecv(r)
comm:send(edge_l, l); comm:send(edge_r, r)
local from_l, from_r = left:wait(), right:wait()
*/
static int c_irecv(lua_State *L) {
  const lmpio_lua_comm *c = lmpio_lua_checklcomm(L, 1);
  int src = checkpeer(L, 2, c->comm, 1), tag = checktag(L, 3, 1);
  int into = checkinto(L, 4);
  lua_settop(L, 4);
  postrecv(L, 1, c, src, tag, into);
  return 1;
}

/***
Sends a value to one rank and receives one from another, without
deadlock whatever the order in which ranks call it: the exchange of a
halo.
The value sent and the one received are messages as `comm:send` and
`comm:recv` move them (arrays and slices in place); the send and the
receive use the same tag.  With `into`, the message received lands in
that array or slice, as `comm:recv` puts it.
@function comm:sendrecv
@param x the value to send
@param dest the rank to send to; nil or `lmpio.PROC_NULL`: nobody
@param src the rank to receive from, `lmpio.ANY_SOURCE`; nil or
  `lmpio.PROC_NULL`: nobody (nil is received)
@param[opt] tag the tag of both (sent with 0 and received with any when
  absent)
@param[opt] into an array or slice to receive into
@return the value received (`into` when given), the rank it came from, its
  tag, and with `into` the number of elements received
@raise as `comm:send` and `comm:recv`
@usage -- a ring: each rank's last element to the right, halo from the left
local right, left = (rank + 1) % size, (rank - 1) % size
comm:sendrecv(u:slice({n - 1, n - 1}), right, left, 0, u:slice({1, 1}))
*/
static int c_sendrecv(lua_State *L) {
  lmpio_lua_comm *c = lmpio_lua_checklcomm(L, 1);
  lmpio_lua_checkany(L, 2);
  int dest = checkpeer(L, 3, c->comm, 0), src = checkpeer(L, 4, c->comm, 1);
  int tag = lua_isnoneornil(L, 5) ? 0 : checktag(L, 5, 0);
  int rtag = lua_isnoneornil(L, 5) ? MPI_ANY_TAG : tag;
  int into = checkinto(L, 6);
  lua_settop(L, 6);
  mreq *r = cached(L, CACHE_RECV); /* 7 */
  initrecv(L, 1, r, c, src, rtag, into);
  mreq *s = cached(L, CACHE_SEND); /* 8: the send's scratch */
  memset(s, 0, offsetof(mreq, buf));
  s->owner = r->owner;
  startsend(L, 2, c, &c->seq, dest, tag, s); /* 9: the keeper */
  mreq *t[2] = {r, s};
  lmpio_lua_p2p_progress(L, t, 2, 1, "sendrecv");
  if (s->err) return lmpio_lua_raise(L, s->err, lua_pushstring(L, s->errmsg));
  int n = lmpio_lua_p2p_results(L, 7, r);
  idle(L, 7);
  return n;
}

/***
The source of a receive that takes a message from any rank (`MPI_ANY_SOURCE`).
@field lmpio.ANY_SOURCE
*/

/***
The tag of a receive that takes a message of any tag (`MPI_ANY_TAG`).
@field lmpio.ANY_TAG
*/

/***
The rank of no process (`MPI_PROC_NULL`): a send to it sends nothing, a
receive from it gets nil at once; nil as a rank means the same.
@field lmpio.PROC_NULL
*/

int lmpio_lua_p2p_open(lua_State *L) {
  static const luaL_Reg local[] = {
    {"send", c_send}, {"isend", c_isend}, {"recv", c_recv}, {"irecv", c_irecv}, {"sendrecv", c_sendrecv},
    {NULL, NULL},
  };
  lmpio_lua_comm_methods(L, NULL, 0, local);
  lua_pushinteger(L, MPI_ANY_SOURCE);
  lua_setfield(L, -2, "ANY_SOURCE");
  lua_pushinteger(L, MPI_ANY_TAG);
  lua_setfield(L, -2, "ANY_TAG");
  lua_pushinteger(L, MPI_PROC_NULL);
  lua_setfield(L, -2, "PROC_NULL");
  return 0;
}

/* What a msgrequest's __gc does (lua/msgreq.c): MPI may still read or
 * write the data, alive until the finalizer returns; a rank leaving on an
 * error does not wait (its partner may never come: the job is being
 * aborted); a receive never matched (its state closed) is cancelled. */
void lmpio_lua_p2p_drop(lua_State *L, lmpio_lua_mreq *r) {
  if (!finalized() && !lmpio_lua_failing()) {
    if (r->state == ST_POSTED && r->req != MPI_REQUEST_NULL) MPI_Cancel(&r->req);
    int rc; /* (a send's wait may wait for its receiver: watched) */
    if (r->req != MPI_REQUEST_NULL) LMPIO_LUA_WAIT(L, "__gc of a msgrequest", rc, MPI_Wait(&r->req, MPI_STATUS_IGNORE));
    if (r->req2 != MPI_REQUEST_NULL) LMPIO_LUA_WAIT(L, "__gc of a msgrequest", rc, MPI_Wait(&r->req2, MPI_STATUS_IGNORE));
    (void)rc;
  }
  r->state = ST_DONE;
  unlist(NULL, r);
  let_go(r);
}
