/* Hints: one table (hints.c) gives each key its field, parser, default and
 * whether every rank must pass the same value. */
#ifndef LMPIO_HINTS_H
#define LMPIO_HINTS_H

#include <mpi.h>
#include <stddef.h>

/* Two-phase uses at most this many aggregators (cb_nodes). */
#define LMPIO__MAX_AGGREGATORS 64

/* Modes of the romio_ds_* and romio_cb_* hints. */
enum { LMPIO__HINT_DISABLE, LMPIO__HINT_ENABLE, LMPIO__HINT_AUTOMATIC };
/* Values of lmpio_fs_driver (read at open): automatic, or the driver. */
enum { LMPIO__HINT_FS_AUTOMATIC };
/* Values of lmpio_collective_outcome. */
enum { LMPIO__OUTCOME_AGREED, LMPIO__OUTCOME_LOCAL };

typedef struct {
  MPI_Offset ind_rd_buffer_size, ind_wr_buffer_size; /* data sieving windows */
  MPI_Offset conv_buffer_size;                      /* staging buffer of conversions */
  int ds_read, ds_write;                            /* romio_ds_read / romio_ds_write */
  int map_reads, map_writes;                        /* lmpio_map_reads / lmpio_map_writes */
  int cb_read, cb_write;                            /* romio_cb_read / romio_cb_write */
  MPI_Offset cb_buffer_size;                        /* two-phase window per aggregator */
  MPI_Offset cb_nodes;                              /* aggregators, at most the ranks; 0: not given */
  char cb_config_list[MPI_MAX_INFO_VAL + 1];        /* aggregators per node; "": not given */
  MPI_Offset striping_factor, striping_unit;        /* 0: not given */
  int fs_driver;                                    /* lmpio_fs_driver: automatic, or 1 + LMPIO__FS_* */
  int collective_outcome;                           /* lmpio_collective_outcome: agreed or local */
  int hint_warnings;                                /* lmpio_hint_warnings: report unknown keys */
} lmpio__hints;

void lmpio__hints_default(lmpio__hints *h, int nranks);
/* Applies the keys of info that the table knows (others are ignored, as the
 * standard allows) to *h; an invalid value leaves *h unchanged and is
 * MPI_ERR_INFO_VALUE naming the key and the accepted values. */
int lmpio__hints_parse(lmpio__hints *h, MPI_Info info, int nranks, const char *call);
/* The hints every rank must pass alike, for the agreement: their values
 * into out[LMPIO__HINTS_SAME] (zeros when ok is 0, a rank that failed), and
 * their labels for lmpio__agree_values ("values of the hint cb_nodes|..."),
 * appended to what buf holds. */
#define LMPIO__HINTS_SAME 8
void lmpio__hints_same(const lmpio__hints *h, int ok, long long *out);
void lmpio__hints_same_labels(char *buf, size_t n);
/* The values in effect, set into info: those given or defaulted; not
 * cb_nodes and cb_config_list, which depend on the nodes (file.c reports
 * them), nor the striping hints when not given. */
int lmpio__hints_to_info(const lmpio__hints *h, MPI_Info info);
/* Keys of info that neither lmpio nor the MPI standard, ROMIO or OMPIO
 * know: appended to the comma-separated list (n bytes; a key listed
 * already is not repeated); returns how many info has. */
int lmpio__hints_unknown(MPI_Info info, char *list, size_t n);
/* Rank 0 reports the keys of list on standard error, each once per
 * process ("did you mean"), unless h or LMPIO_HINT_WARNINGS=0 says not to. */
void lmpio__hints_warn(const lmpio__hints *h, const char *list, int rank);
/* Row i of the README's table of hints ("| key | default | values |"), or
 * NULL past the last row. */
const char *lmpio__hints_row(int i, char *buf, size_t n);
/* Row i of the README's table of environment variables (NULL past the
 * last): every LMPIO_* variable the core reads. */
const char *lmpio__hints_env_row(int i, char *buf, size_t n);

#endif
