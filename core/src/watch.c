/* Hangs that explain themselves: a thread that has waited LMPIO_HANG_REPORT
 * seconds (60 by default; 0: never) inside one blocking call of lmpio says
 * so on standard error, "lmpio: rank 1 has waited 60 s in write_at_all
 * (heat.lua:42)", and again at doubling intervals, so that a job whose
 * ranks went into different collective calls (one in a file's collective,
 * another in a barrier of another communicator, which no agreement can
 * see) names where each rank is.
 *
 * A waiting thread only notes its call and the time in a slot of its own
 * (one clock read a call); a watchdog thread, started at the first wait,
 * looks at the slots now and then and prints.  The place in a script comes
 * from the binding's where function, called by the watchdog while the
 * waiting thread is inside the call: the slot's state tells the watchdog
 * that the thread is still there, and a thread leaving waits for a report
 * being made of it to finish (its script's frames must not change under
 * the where function).
 *
 * Code of the binding that runs inside a watched call on the waiting
 * thread (a conversion function of a user representation, written in Lua,
 * which MPI_Wait runs) would change what the where function reads: the core
 * pauses the watch around it (lmpio__watch_pause), and a report due then
 * waits for the resume.  A binding's wait that is a loop of its own, which
 * runs the binding's code between polls, is never read from the watchdog:
 * it reports itself from its loop (lmpio_watch_tick). */
#include "ground.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 256 /* threads of a process that may wait at once; more are not watched */

enum { FREE, IDLE, WAITING, READING };

typedef struct {
  _Atomic int state;
  const char *call;
  double since;      /* CLOCK_MONOTONIC seconds */
  double next;       /* when the next report is due */
  lmpio_where_fn *where;
  void *arg;
} slot;

static slot slots[SLOTS];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static double every;   /* LMPIO_HANG_REPORT; 0: off */
static int rank = -1;  /* in MPI_COMM_WORLD, read by the first wait */
static _Thread_local slot *mine;
static _Thread_local int unwatched; /* no slot was left */
static _Thread_local int depth;     /* begins not yet ended (a wait inside a watched call is that call's) */
static _Thread_local int paused;    /* pauses not yet resumed */
static _Thread_local int held;      /* the outermost pause took this thread's slot from WAITING */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The report line: "lmpio: rank R has waited S s in CALL (WHERE)". */
static void say(const char *call, double waited, lmpio_where_fn *fn, void *arg) {
  char where[512] = "";
  if (fn) fn(arg, where, sizeof where);
  where[sizeof where - 1] = '\0';
  if (!call) call = "a call";
  if (strncmp(call, "lmpio_file_", 11) == 0) call += 11;
  int digits = every < 1 ? 1 : 0; /* (an interval below a second, as tests use) */
  fprintf(stderr, "lmpio: rank %d has waited %.*f s in %s%s%s%s\n", rank, digits, waited, call, where[0] ? " (" : "",
          where, where[0] ? ")" : "");
  fflush(stderr);
}

static void report(slot *s, double t) { say(s->call, t - s->since, s->where, s->arg); }

/* The watchdog ends when the library is unloaded (a destructor wakes and
 * joins it): a binding loaded with dlopen, the Lua module, unloads the
 * library when its state closes, and a thread left running its code then
 * crashed the process (on its next tick, with the code unmapped). */
static pthread_mutex_t dog_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dog_wake = PTHREAD_COND_INITIALIZER;
static int dog_stop;
static int dog_running;
static pid_t dog_pid; /* (a forked child that exits has no watchdog to join) */
static pthread_t dog;

static void *watchdog(void *unused) {
  (void)unused;
  pthread_mutex_lock(&dog_lock);
  while (!dog_stop) {
    double tick = every / 4 < 0.25 ? every / 4 : 0.25;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* (the condition's clock) */
    long ns = until.tv_nsec + (long)(tick * 1e9);
    until.tv_sec += ns / 1000000000L;
    until.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&dog_wake, &dog_lock, &until);
    if (dog_stop) break;
    pthread_mutex_unlock(&dog_lock);
    double t = now();
    for (int i = 0; i < SLOTS; i++) {
      slot *s = &slots[i];
      int expect = WAITING;
      if (atomic_load_explicit(&s->state, memory_order_acquire) != WAITING || t < s->next) continue;
      if (!atomic_compare_exchange_strong(&s->state, &expect, READING)) continue;
      if (t >= s->next) { /* (read again: the thread may have left and come back) */
        report(s, t);
        s->next = s->since + 2 * (s->next - s->since); /* 60 s, 120 s, 240 s... */
      }
      atomic_store_explicit(&s->state, WAITING, memory_order_release);
    }
    pthread_mutex_lock(&dog_lock);
  }
  pthread_mutex_unlock(&dog_lock);
  return NULL;
}

__attribute__((destructor)) static void stop_watchdog(void) {
  if (!dog_running || getpid() != dog_pid) return;
  pthread_mutex_lock(&dog_lock);
  dog_stop = 1;
  pthread_cond_signal(&dog_wake);
  pthread_mutex_unlock(&dog_lock);
  pthread_join(dog, NULL);
  dog_running = 0;
}

static void start(void) {
  const char *env = getenv("LMPIO_HANG_REPORT");
  every = env && *env ? atof(env) : 60;
  if (every <= 0) return;
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (pthread_create(&dog, NULL, watchdog, NULL) != 0) every = 0; /* (no reports, nothing else lost) */
  else dog_running = 1, dog_pid = getpid();
}

/* This thread's slot, taken at its first use. */
static slot *own(void) {
  if (mine || unwatched) return mine;
  for (int i = 0; i < SLOTS; i++) {
    int expect = FREE;
    if (atomic_compare_exchange_strong(&slots[i].state, &expect, IDLE)) return mine = &slots[i];
  }
  unwatched = 1;
  return NULL;
}

void lmpio_watch_begin(const char *call) {
  if (depth++ > 0) return;
  pthread_once(&once, start);
  if (every <= 0) return;
  slot *s = own();
  if (!s) return;
  s->call = call;
  s->since = now();
  s->next = s->since + every;
  atomic_store_explicit(&s->state, WAITING, memory_order_release);
}

/* The slot leaves WAITING for IDLE once a report being made of it has
 * ended (the report reads the script); whether it was WAITING. */
static int leave(slot *s) {
  int expect = WAITING;
  while (!atomic_compare_exchange_weak(&s->state, &expect, IDLE)) {
    if (expect != WAITING && expect != READING) return 0; /* (not watched now) */
    expect = WAITING;
    sched_yield();
  }
  return 1;
}

void lmpio_watch_end(void) {
  if (depth > 0 && --depth > 0) return;
  if (mine) leave(mine);
}

void lmpio__watch_pause(void) {
  if (paused++ > 0 || depth == 0 || !mine) return;
  held = leave(mine);
}

void lmpio__watch_resume(void) {
  if (paused == 0 || --paused > 0 || !held) return;
  held = 0;
  if (depth > 0 && mine) atomic_store_explicit(&mine->state, WAITING, memory_order_release);
}

void lmpio_watch_tick(lmpio_watch_loop *w, const char *call) {
  if (depth > 0) return; /* inside a watched call: that call is reported */
  pthread_once(&once, start);
  if (every <= 0) return;
  double t = now();
  if (w->since <= 0) {
    w->since = t;
    w->next = t + every;
    return;
  }
  if (t < w->next) return;
  slot *s = own();
  say(call, t - w->since, s ? s->where : NULL, s ? s->arg : NULL);
  w->next = w->since + 2 * (w->next - w->since);
}

void lmpio_watch_where(lmpio_where_fn *fn, void *arg) {
  slot *s = own();
  if (!s) return;
  s->where = fn;
  s->arg = arg;
}
