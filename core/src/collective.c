/* The blocking collective calls (*_all); collrun.c runs them. */
#include "run.h"

#define COLLECTIVE(name, args, offset, use_fp, buf, dir)                                           \
  int lmpio_file_##name args {                                                                     \
    LMPIO__COUNTED(fh, LMPIO__K_COLL, dir, lmpio__collective(fh, offset, use_fp, (void *)buf, count, datatype, \
                                                             dir, status, MPI_SUCCESS, "lmpio_file_" #name)); \
  }
COLLECTIVE(read_at_all, (lmpio_file fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Status *status), offset, 0, buf, LMPIO__READ)
COLLECTIVE(write_at_all, (lmpio_file fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status), offset, 0, buf, LMPIO__WRITE)
COLLECTIVE(read_all, (lmpio_file fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status), 0, 1, buf, LMPIO__READ)
COLLECTIVE(write_all, (lmpio_file fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status), 0, 1, buf, LMPIO__WRITE)
COLLECTIVE(read_at_all_c, (lmpio_file fh, MPI_Offset offset, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), offset, 0, buf, LMPIO__READ)
COLLECTIVE(write_at_all_c, (lmpio_file fh, MPI_Offset offset, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), offset, 0, buf, LMPIO__WRITE)
COLLECTIVE(read_all_c, (lmpio_file fh, void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), 0, 1, buf, LMPIO__READ)
COLLECTIVE(write_all_c, (lmpio_file fh, const void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Status *status), 0, 1, buf, LMPIO__WRITE)
