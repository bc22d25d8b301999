/*
 * PnetCDF on the drop-in (built by core/test/dropin/run.sh when PnetCDF's
 * header and library are installed): a CDF-5 file with alignment hints,
 * a fixed and two record variables written collectively (vara, iput +
 * wait_all, strided vars, varn), fill mode, a redef that grows the header
 * (PnetCDF moves the data), then reopened and read back.  PnetCDF reads
 * record variables through a struct filetype whose header bytes lie below
 * the lower bound of a resized record type.
 */
#include <pnetcdf.h>
#include "../check.h"

static int failed_calls;
#define NC(x) nc_ok(x, #x, __LINE__)
static void nc_ok(int err, const char *what, int line) {
  if (err == NC_NOERR) return;
  failed_calls++;
  fprintf(stderr, "line %d: %s: %s\n", line, what, ncmpi_strerror(err));
}

int main(int argc, char **argv) {
  int rank, np;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  char path[4096];
  test_path(path, sizeof path, "pnetcdf");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "nc_header_align_size", "1024");
  MPI_Info_set(info, "nc_var_align_size", "512");

  int ncid, dt, dy, dx, dz, vfix, vrec, vstr, vint, vfill;
  NC(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER | NC_64BIT_DATA, info, &ncid));
  NC(ncmpi_set_fill(ncid, NC_FILL, NULL));
  NC(ncmpi_def_dim(ncid, "t", NC_UNLIMITED, &dt));
  NC(ncmpi_def_dim(ncid, "y", 6, &dy));
  NC(ncmpi_def_dim(ncid, "x", 4 * np, &dx));
  NC(ncmpi_def_dim(ncid, "z", 10 * np, &dz));
  int d2[2] = {dy, dx}, d3[3] = {dt, dy, dx}, dr[2] = {dt, dz};
  NC(ncmpi_def_var(ncid, "fix", NC_DOUBLE, 2, d2, &vfix));
  NC(ncmpi_def_var(ncid, "rec", NC_FLOAT, 3, d3, &vrec));
  NC(ncmpi_def_var(ncid, "str", NC_INT, 1, &dz, &vstr));
  NC(ncmpi_def_var(ncid, "irec", NC_INT, 2, dr, &vint));
  NC(ncmpi_enddef(ncid));

  MPI_Info used;
  int served = 0;
  if (ncmpi_inq_file_info(ncid, &used) == NC_NOERR) {
    char v[MPI_MAX_INFO_VAL + 1];
    MPI_Info_get(used, "lmpio_version", MPI_MAX_INFO_VAL, v, &served);
    MPI_Info_free(&used);
  }
  check("PnetCDF's file is served by lmpio", served);

  /* fix: a 6 x 4 column block per rank */
  double fix[24];
  for (int i = 0; i < 24; i++) fix[i] = rank * 100 + i;
  MPI_Offset sf[2] = {0, 4 * rank}, cf[2] = {6, 4};
  NC(ncmpi_put_vara_double_all(ncid, vfix, sf, cf, fix));
  /* rec: three records of column blocks, nonblocking */
  float rec[3][24];
  int req[3], st[3];
  for (int r = 0; r < 3; r++) {
    for (int i = 0; i < 24; i++) rec[r][i] = r * 1000 + rank * 100 + i + 0.25f;
    MPI_Offset s3[3] = {r, 0, 4 * rank}, c3[3] = {1, 6, 4};
    NC(ncmpi_iput_vara_float(ncid, vrec, s3, c3, rec[r], &req[r]));
  }
  NC(ncmpi_wait_all(ncid, 3, req, st));
  for (int r = 0; r < 3; r++) NC(st[r]);
  /* str: rank r owns z[r], z[r + np], ... */
  int sv[10];
  for (int i = 0; i < 10; i++) sv[i] = rank + i * np;
  MPI_Offset s1 = rank, c1 = 10, str1 = np;
  NC(ncmpi_put_vars_int_all(ncid, vstr, &s1, &c1, &str1, sv));
  /* irec: record 0 filled (PnetCDF fills records only when asked), record
   * 1 in three pieces per rank (varn) */
  NC(ncmpi_fill_var_rec(ncid, vint, 0));
  int iv[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (int i = 0; i < 10; i++) iv[i] += 10 * rank;
  MPI_Offset p0[2] = {1, 10 * rank}, p1[2] = {1, 10 * rank + 3}, p2[2] = {1, 10 * rank + 7};
  MPI_Offset n0[2] = {1, 3}, n1[2] = {1, 4}, n2[2] = {1, 3};
  MPI_Offset *starts[3] = {p0, p1, p2}, *counts[3] = {n0, n1, n2};
  NC(ncmpi_put_varn_int_all(ncid, vint, 3, starts, counts, iv));
  /* redef: a 3000-byte attribute and a new variable grow the header */
  NC(ncmpi_redef(ncid));
  char big[3000];
  memset(big, 'h', sizeof big);
  NC(ncmpi_put_att_text(ncid, NC_GLOBAL, "history", sizeof big, big));
  NC(ncmpi_def_var(ncid, "filled", NC_SHORT, 1, &dx, &vfill));
  NC(ncmpi_enddef(ncid));
  NC(ncmpi_close(ncid));

  NC(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, info, &ncid));
  MPI_Offset nrec = 0;
  NC(ncmpi_inq_dimlen(ncid, dt, &nrec));
  check("PnetCDF: three records", nrec == 3);
  double gfix[24];
  NC(ncmpi_get_vara_double_all(ncid, vfix, sf, cf, gfix));
  check("PnetCDF: fixed variable read back", memcmp(gfix, fix, sizeof fix) == 0);
  size_t n = (size_t)3 * 6 * 4 * np;
  float *all = malloc(n * sizeof *all);
  MPI_Offset sa[3] = {0, 0, 0}, ca[3] = {3, 6, 4 * np};
  NC(ncmpi_get_vara_float_all(ncid, vrec, sa, ca, all));
  int ok = 1;
  for (int r = 0; r < 3; r++)
    for (int y = 0; y < 6; y++)
      for (int x = 0; x < 4 * np; x++)
        ok &= all[(r * 6 + y) * 4 * np + x] == r * 1000 + (x / 4) * 100 + y * 4 + x % 4 + 0.25f;
  check("PnetCDF: record variable (iput) read back whole on every rank", ok);
  free(all);
  int gs[10];
  NC(ncmpi_get_vars_int_all(ncid, vstr, &s1, &c1, &str1, gs));
  check("PnetCDF: strided variable read back", memcmp(gs, sv, sizeof sv) == 0);
  int gi[2][10];
  MPI_Offset si[2] = {0, 10 * rank}, ci[2] = {2, 10};
  NC(ncmpi_get_vara_int_all(ncid, vint, si, ci, &gi[0][0]));
  ok = memcmp(gi[1], iv, sizeof iv) == 0;
  for (int i = 0; i < 10; i++) ok &= gi[0][i] == NC_FILL_INT;
  check("PnetCDF: varn record and filled record read back", ok);
  short gf[4];
  MPI_Offset sx = 4 * rank, cx = 4;
  NC(ncmpi_get_vara_short_all(ncid, vfill, &sx, &cx, gf));
  ok = 1;
  for (int i = 0; i < 4; i++) ok &= gf[i] == NC_FILL_SHORT;
  check("PnetCDF: variable added by redef is filled", ok);
  NC(ncmpi_close(ncid));
  check("PnetCDF: every call succeeded", failed_calls == 0);
  MPI_Info_free(&info);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) ncmpi_delete(path, MPI_INFO_NULL);
  MPI_Finalize();
  return check_failures != 0;
}
