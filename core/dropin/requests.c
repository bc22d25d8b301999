/*
 * The completion calls (MPI_Wait, MPI_Test, MPI_Waitall, MPI_Testall,
 * MPI_Waitany, MPI_Testany, MPI_Waitsome, MPI_Testsome,
 * MPI_Request_get_status) in front of the MPI library's own.
 *
 * lmpio's nonblocking operations are MPI generalized requests, and MPI
 * hands the error of a generalized request to MPI_COMM_WORLD's error
 * handler: a failed background write would abort a program that never
 * changed that handler (MPI_ERRORS_ARE_FATAL), where the standard says a
 * file operation's error goes to the file's handler (MPI_ERRORS_RETURN
 * unless the program set another).  So each call here runs the library's
 * own under lmpio_request_failures: file requests that failed complete as
 * successes for MPI, and their failures come back here, each handed to its
 * file's error handler (MPI_FILE_NULL's once the file is closed); the call
 * then returns the class (MPI_ERR_IN_STATUS for the calls of several
 * requests) and puts it in the status's MPI_ERROR.  Every other request,
 * and its errors, are the MPI library's business as before: a program
 * that mixes file and message requests in one MPI_Waitall gets both.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dropin.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the MPI library's own calls ------------------------------------------ */

/* This library's own (hidden; exported under the MPI names below). */
int dropin__wait(MPI_Request *request, MPI_Status *status);
int dropin__test(MPI_Request *request, int *flag, MPI_Status *status);
int dropin__get_status(MPI_Request request, int *flag, MPI_Status *status);
int dropin__waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]);
int dropin__testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[]);
int dropin__waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status);
int dropin__testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status);
int dropin__waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                     MPI_Status array_of_statuses[]);
int dropin__testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                     MPI_Status array_of_statuses[]);

static struct {
  int (*wait)(MPI_Request *, MPI_Status *);
  int (*test)(MPI_Request *, int *, MPI_Status *);
  int (*get_status)(MPI_Request, int *, MPI_Status *);
  int (*waitall)(int, MPI_Request *, MPI_Status *);
  int (*testall)(int, MPI_Request *, int *, MPI_Status *);
  int (*waitany)(int, MPI_Request *, int *, MPI_Status *);
  int (*testany)(int, MPI_Request *, int *, int *, MPI_Status *);
  int (*waitsome)(int, MPI_Request *, int *, int *, MPI_Status *);
  int (*testsome)(int, MPI_Request *, int *, int *, MPI_Status *);
} real;
static pthread_once_t looked = PTHREAD_ONCE_INIT;

/* The MPI library's call of that name: in the objects after this one (the
 * MPI library, when the drop-in is preloaded), or anywhere, but never this
 * library's own. */
static void *real_sym(const char *name, const void *self) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p || p == self) p = dlsym(RTLD_DEFAULT, name);
  if (!p || p == self) {
    fprintf(stderr, "lmpio-mpi: cannot find the MPI library's %s\n", name);
    abort();
  }
  return p;
}

#define LOOK(field, name) *(void **)&real.field = real_sym(#name, (void *)dropin__##field)
static void look_up(void) {
  LOOK(wait, PMPI_Wait);
  LOOK(test, PMPI_Test);
  LOOK(get_status, PMPI_Request_get_status);
  LOOK(waitall, PMPI_Waitall);
  LOOK(testall, PMPI_Testall);
  LOOK(waitany, PMPI_Waitany);
  LOOK(testany, PMPI_Testany);
  LOOK(waitsome, PMPI_Waitsome);
  LOOK(testsome, PMPI_Testsome);
}

/* ---- failures of file requests ------------------------------------------- */

typedef struct {
  MPI_Request req;
  lmpio_file fh;
  int cls;
  char *msg;
} failure;

typedef struct collector {
  failure *v;
  int n, cap;
  failure first[4];
  struct collector *outer; /* a completion call inside an error handler called by the library's */
} collector;

static _Thread_local collector *current;

static void on_failure(void *arg, MPI_Request request, lmpio_file fh, int errorclass, const char *message) {
  (void)arg;
  collector *c = current;
  if (!c) return;
  if (c->n == c->cap) {
    int cap = c->cap * 2;
    failure *v = c->v == c->first ? malloc(sizeof *v * (size_t)cap) : realloc(c->v, sizeof *v * (size_t)cap);
    if (!v) return; /* out of memory: this failure is a success for the program */
    if (c->v == c->first) memcpy(v, c->first, sizeof c->first);
    c->v = v;
    c->cap = cap;
  }
  failure *f = &c->v[c->n++];
  f->req = request;
  f->fh = fh;
  f->cls = errorclass;
  f->msg = message ? strdup(message) : NULL;
}

static void begin(collector *c) {
  pthread_once(&looked, look_up);
  c->v = c->first;
  c->n = 0;
  c->cap = (int)(sizeof c->first / sizeof c->first[0]);
  c->outer = current;
  current = c;
  lmpio_request_failures(on_failure, NULL);
}

static void end(collector *c) {
  current = c->outer;
  if (!current) lmpio_request_failures(NULL, NULL);
}

static void done(collector *c) {
  for (int i = 0; i < c->n; i++) free(c->v[i].msg);
  if (c->v != c->first) free(c->v);
}

/* Hands failure f to its file's error handler; returns its class. */
static int deliver(const failure *f, const char *call) {
  return dropin__error(dropin__file_of(f->fh), f->cls, call, f->msg ? f->msg : "");
}

/* The failure of request r, or NULL. */
static const failure *failure_of(const collector *c, MPI_Request r) {
  for (int i = 0; i < c->n; i++)
    if (c->v[i].req == r) return &c->v[i];
  return NULL;
}

/* A copy of the handles of a call on several requests (MPI sets the
 * completed ones to MPI_REQUEST_NULL), to tell which failed; NULL when
 * there are none or no memory (failures are then not told apart). */
typedef struct {
  MPI_Request *h;
  MPI_Request few[16];
} handles;

static void keep_handles(handles *k, int n, const MPI_Request *reqs) {
  k->h = NULL;
  if (n <= 0 || !reqs) return;
  k->h = (size_t)n <= sizeof k->few / sizeof k->few[0] ? k->few : malloc(sizeof *k->h * (size_t)n);
  if (k->h) memcpy(k->h, reqs, sizeof *k->h * (size_t)n);
}

static void drop_handles(handles *k) {
  if (k->h != k->few) free(k->h);
}

/* ---- one request ------------------------------------------------------------ */

/* After a call that completed (or looked at) request r: its failure, if
 * any, reported; rc otherwise. */
static int one(collector *c, int rc, MPI_Request r, MPI_Status *status, const char *call) {
  const failure *f = c->n ? failure_of(c, r) : NULL;
  if (f) {
    if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = f->cls;
    rc = deliver(f, call);
  }
  done(c);
  return rc;
}

int dropin__wait(MPI_Request *request, MPI_Status *status) {
  collector c;
  begin(&c);
  MPI_Request r = request ? *request : MPI_REQUEST_NULL;
  int rc = real.wait(request, status);
  end(&c);
  return one(&c, rc, r, status, "MPI_Wait");
}

int dropin__test(MPI_Request *request, int *flag, MPI_Status *status) {
  collector c;
  begin(&c);
  MPI_Request r = request ? *request : MPI_REQUEST_NULL;
  int rc = real.test(request, flag, status);
  end(&c);
  return one(&c, rc, r, status, "MPI_Test");
}

int dropin__get_status(MPI_Request request, int *flag, MPI_Status *status) {
  collector c;
  begin(&c);
  int rc = real.get_status(request, flag, status);
  end(&c);
  return one(&c, rc, request, status, "MPI_Request_get_status");
}

int dropin__waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status) {
  collector c;
  handles k;
  keep_handles(&k, count, array_of_requests);
  begin(&c);
  int rc = real.waitany(count, array_of_requests, index, status);
  end(&c);
  MPI_Request r = k.h && index && *index >= 0 && *index < count ? k.h[*index] : MPI_REQUEST_NULL;
  drop_handles(&k);
  return one(&c, rc, r, status, "MPI_Waitany");
}

int dropin__testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status) {
  collector c;
  handles k;
  keep_handles(&k, count, array_of_requests);
  begin(&c);
  int rc = real.testany(count, array_of_requests, index, flag, status);
  end(&c);
  MPI_Request r = k.h && index && *index >= 0 && *index < count ? k.h[*index] : MPI_REQUEST_NULL;
  drop_handles(&k);
  return one(&c, rc, r, status, "MPI_Testany");
}

/* ---- several requests ------------------------------------------------------- */

/* After a call that completed the requests at positions at[0..n) of the
 * kept handles (at NULL: positions 0..n), whose statuses are st[0..n): the
 * failures reported, each in its status; MPI_ERR_IN_STATUS when there was
 * one, rc otherwise.  The statuses of the others say MPI_SUCCESS unless
 * the library said otherwise (rc MPI_ERR_IN_STATUS). */
static int several(collector *c, int rc, const handles *k, int count, const int *at, int n, MPI_Status *st,
                   const char *call) {
  if (c->n == 0) {
    done(c);
    return rc;
  }
  int failed = 0;
  for (int j = 0; j < n; j++) {
    int i = at ? at[j] : j;
    const failure *f = i >= 0 && i < count && k->h ? failure_of(c, k->h[i]) : NULL;
    if (!f) {
      if (st != MPI_STATUSES_IGNORE && rc == MPI_SUCCESS) st[j].MPI_ERROR = MPI_SUCCESS;
      continue;
    }
    if (st != MPI_STATUSES_IGNORE) st[j].MPI_ERROR = f->cls;
    deliver(f, call);
    failed = 1;
  }
  if (!k->h) /* the handles could not be kept: still, each goes to its handler */
    for (int i = 0; i < c->n; i++, failed = 1) deliver(&c->v[i], call);
  done(c);
  return failed ? MPI_ERR_IN_STATUS : rc;
}

int dropin__waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]) {
  collector c;
  handles k;
  keep_handles(&k, count, array_of_requests);
  begin(&c);
  int rc = real.waitall(count, array_of_requests, array_of_statuses);
  end(&c);
  rc = several(&c, rc, &k, count, NULL, count, array_of_statuses, "MPI_Waitall");
  drop_handles(&k);
  return rc;
}

int dropin__testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[]) {
  collector c;
  handles k;
  keep_handles(&k, count, array_of_requests);
  begin(&c);
  int rc = real.testall(count, array_of_requests, flag, array_of_statuses);
  end(&c);
  rc = several(&c, rc, &k, count, NULL, flag && *flag ? count : 0, array_of_statuses, "MPI_Testall");
  drop_handles(&k);
  return rc;
}

int dropin__waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                         MPI_Status array_of_statuses[]) {
  collector c;
  handles k;
  keep_handles(&k, incount, array_of_requests);
  begin(&c);
  int rc = real.waitsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
  end(&c);
  int n = outcount && *outcount != MPI_UNDEFINED ? *outcount : 0;
  rc = several(&c, rc, &k, incount, array_of_indices, n, array_of_statuses, "MPI_Waitsome");
  drop_handles(&k);
  return rc;
}

int dropin__testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                         MPI_Status array_of_statuses[]) {
  collector c;
  handles k;
  keep_handles(&k, incount, array_of_requests);
  begin(&c);
  int rc = real.testsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
  end(&c);
  int n = outcount && *outcount != MPI_UNDEFINED ? *outcount : 0;
  rc = several(&c, rc, &k, incount, array_of_indices, n, array_of_statuses, "MPI_Testsome");
  drop_handles(&k);
  return rc;
}

/* The exported names: the MPI_ and PMPI_ ones are the same calls (a profiling
 * tool that wraps MPI_Wait and calls PMPI_Wait still comes here; so does
 * Open MPI's Fortran binding, which calls PMPI_Wait). */
#define NAMES(N, n, params)                                                       \
  EXPORT int PMPI_##N params __attribute__((alias("dropin__" #n)));              \
  EXPORT int MPI_##N params __attribute__((alias("dropin__" #n)));
NAMES(Wait, wait, (MPI_Request *request, MPI_Status *status))
NAMES(Test, test, (MPI_Request *request, int *flag, MPI_Status *status))
NAMES(Request_get_status, get_status, (MPI_Request request, int *flag, MPI_Status *status))
NAMES(Waitall, waitall, (int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]))
NAMES(Testall, testall, (int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[]))
NAMES(Waitany, waitany, (int count, MPI_Request array_of_requests[], int *index, MPI_Status *status))
NAMES(Testany, testany, (int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status))
NAMES(Waitsome, waitsome,
      (int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
       MPI_Status array_of_statuses[]))
NAMES(Testsome, testsome,
      (int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
       MPI_Status array_of_statuses[]))
