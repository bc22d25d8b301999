/* The core's code stays loaded until the process ends once it has started
 * something that outlives the call starting it: the workers of the pool
 * (threads) or a signal handler (SIGBUS over mappings).  (A stream's server
 * thread is joined when its file closes; the hang watchdog is stopped and
 * joined by watch.c's destructor when the library is unloaded.)
 *
 * A host that loads the core with dlopen may unload it while these still
 * run: lua_close unloads the C modules it loaded (lmpio.so, and with it
 * liblmpio.so), after which a worker's wake-up, or a SIGBUS, jumps into
 * unmapped memory and the process dies of SIGSEGV on its way out.  Marking the object that holds this code RTLD_NODELETE keeps it
 * mapped; where the core is linked into the program, or the object cannot
 * be found again, there is nothing to keep and nothing is done. */
#include "ground.h"

#include <dlfcn.h>
#include <pthread.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void keep(void) {
  Dl_info info;
  /* (RTLD_NOLOAD: the object is loaded already; the call only adds the flag.
   * The reference it takes is never dropped, on purpose.) */
  if (dladdr((void *)&lmpio__stay_loaded, &info) && info.dli_fname && info.dli_fname[0])
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

void lmpio__stay_loaded(void) { pthread_once(&once, keep); }
