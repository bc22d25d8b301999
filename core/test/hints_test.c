/* Hints: one table (core/src/hints.c) gives defaults, parsing, validation,
 * get_info and the README's table.  `hints_test --table` prints the table
 * as the README shows it. */
#include "testlib.h"
#include <dirent.h>
#include "internals.h"

static void set(MPI_Info info, const char *k, const char *v) { MPI_Info_set(info, k, v); }

/* Opening with one bad value is MPI_ERR_INFO_VALUE naming the key. */
static void expect_bad(const char *key, const char *value, const char *accepted) {
  char *path = tl_path("badhint");
  MPI_Info info;
  MPI_Info_create(&info);
  set(info, key, value);
  lmpio_file fh = LMPIO_FILE_NULL;
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh), MPI_ERR_INFO_VALUE);
  TL_CHECK(fh == LMPIO_FILE_NULL);
  const char *m = lmpio_last_error_message();
  TL_CHECK(strstr(m, key) != NULL);
  TL_CHECK(strstr(m, accepted) != NULL);
  if (tl_case_failed) fprintf(stderr, "[rank %d] %s=%s: %s\n", tl_rank, key, value, m);
  MPI_Info_free(&info);
  tl_unlink(path);
}

static void test_invalid_values(void) {
  expect_bad("romio_cb_write", "yes", "enable, disable or automatic");
  expect_bad("romio_ds_read", "sometimes", "enable, disable or automatic");
  expect_bad("cb_buffer_size", "lots", "a size in bytes");
  expect_bad("ind_rd_buffer_size", "-4096", "a size in bytes");
  expect_bad("lmpio_conversion_buffer_size", "0", "a size in bytes");
  expect_bad("cb_nodes", "99999999999999999999", "a number of processes");
  expect_bad("cb_config_list", "node1:", "host:count entries");
  expect_bad("cb_config_list", "*x:2", "host:count entries");
  expect_bad("striping_factor", "0", "a number from 1");
  expect_bad("striping_unit", "-1", "a size in bytes");
  /* set_info and set_view refuse them too, and keep what was in effect */
  char *path = tl_path("hints");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  MPI_Info info, used;
  MPI_Info_create(&info);
  set(info, "ind_wr_buffer_size", "4096");
  set(info, "romio_cb_read", "maybe");
  TL_RC(lmpio_file_set_info(fh, info), MPI_ERR_INFO_VALUE);
  TL_RC(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info), MPI_ERR_INFO_VALUE);
  TL_OK(lmpio_file_get_info(fh, &used));
  char v[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  MPI_Info_get(used, "ind_wr_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "524288") == 0);
  MPI_Info_free(&used);
  MPI_Info_free(&info);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* get_info reports the values in effect: cb_nodes is never more than the
 * ranks; lmpio_version says which MPI-IO serves the file. */
static void test_values_in_effect(void) {
  char *path = tl_path("effect");
  MPI_Info info, used;
  MPI_Info_create(&info);
  set(info, "cb_nodes", "1000");
  set(info, "cb_buffer_size", " 8192");
  set(info, "romio_ds_write", "disable");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  TL_OK(lmpio_file_get_info(fh, &used));
  char v[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  MPI_Info_get(used, "cb_nodes", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && atoi(v) == tl_size);
  MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "8192") == 0);
  MPI_Info_get(used, "romio_ds_write", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "disable") == 0);
  MPI_Info_get(used, "romio_ds_read", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "automatic") == 0);
  MPI_Info_get(used, "lmpio_version", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, LMPIO_VERSION) == 0);
  MPI_Info_free(&used);
  MPI_Info_free(&info);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* The values of the mode hints are case-insensitive, as ROMIO's and
 * OMPIO's are ("ENABLE" is a common spelling); get_info reports them in
 * lower case. */
static void test_mode_case(void) {
  char *path = tl_path("case");
  MPI_Info info, used;
  MPI_Info_create(&info);
  set(info, "romio_cb_write", "ENABLE");
  set(info, "romio_cb_read", "Disable");
  set(info, "romio_ds_write", "AUTOMATIC");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  if (fh == LMPIO_FILE_NULL) {
    MPI_Info_free(&info);
    tl_unlink(path);
    return;
  }
  TL_OK(lmpio_file_get_info(fh, &used));
  char v[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  MPI_Info_get(used, "romio_cb_write", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "enable") == 0);
  MPI_Info_get(used, "romio_cb_read", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "disable") == 0);
  MPI_Info_get(used, "romio_ds_write", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "automatic") == 0);
  MPI_Info_free(&used);
  /* set_info and set_view too */
  set(info, "romio_cb_write", "DISABLE");
  set(info, "romio_ds_read", "eNaBlE");
  TL_OK(lmpio_file_set_info(fh, info));
  TL_OK(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info));
  TL_OK(lmpio_file_get_info(fh, &used));
  MPI_Info_get(used, "romio_cb_write", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "disable") == 0);
  MPI_Info_get(used, "romio_ds_read", MPI_MAX_INFO_VAL, v, &flag);
  TL_CHECK(flag && strcmp(v, "enable") == 0);
  MPI_Info_free(&used);
  MPI_Info_free(&info);
  TL_OK(lmpio_file_close(&fh));
  tl_unlink(path);
}

/* Collective-buffering hints must match on every rank: a mismatch is
 * MPI_ERR_NOT_SAME on every rank, not a hang or a silent choice. */
static void test_must_agree(void) {
  if (tl_size < 2) return;
  char *path = tl_path("agree");
  MPI_Info info;
  MPI_Info_create(&info);
  set(info, "cb_buffer_size", tl_rank == 1 ? "4096" : "8192");
  set(info, "ind_rd_buffer_size", tl_rank == 1 ? "4096" : "8192"); /* may differ */
  lmpio_file fh;
  TL_RC(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "values of the hint cb_buffer_size") != NULL);
  MPI_Info_delete(info, "cb_buffer_size");
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  MPI_Info_set(info, "romio_cb_write", tl_rank == 1 ? "enable" : "disable");
  TL_RC(lmpio_file_set_info(fh, info), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "values of the hint romio_cb_write") != NULL);
  MPI_Info_delete(info, "romio_cb_write");
  MPI_Info_set(info, "cb_config_list", tl_rank == 1 ? "*:2" : "*:1");
  TL_RC(lmpio_file_set_info(fh, info), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "values of the hint cb_config_list") != NULL);
  MPI_Info_delete(info, "cb_config_list");
  MPI_Info_set(info, "striping_unit", tl_rank == 1 ? "65536" : "1048576");
  TL_RC(lmpio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info), MPI_ERR_NOT_SAME);
  TL_CHECK(strstr(lmpio_last_error_message(), "values of the hint striping_unit") != NULL);
  TL_OK(lmpio_file_close(&fh));
  MPI_Info_free(&info);
  tl_unlink(path);
}

/* The README's table is the table of hints.c, row for row. */
/* Rank 0's standard error while fn runs, into text (rank 0 only). */
static void capture_stderr(void (*fn)(void *), void *arg, char *text, size_t n) {
  char *out = tl_path("stderr");
  fflush(stderr);
  int saved = dup(2);
  if (tl_rank == 0 && !freopen(out, "w", stderr)) tl_case_failed = 1;
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  text[0] = '\0';
  if (tl_rank == 0) {
    FILE *f = fopen(out, "r");
    size_t got = f ? fread(text, 1, n - 1, f) : 0;
    text[got] = '\0';
    if (f) fclose(f);
  }
  tl_unlink(out);
}

/* The value of key in fh's get_info ("" when absent). */
static void info_value(lmpio_file fh, const char *key, char *v) {
  MPI_Info used;
  int flag = 0;
  v[0] = '\0';
  TL_OK(lmpio_file_get_info(fh, &used));
  MPI_Info_get(used, key, MPI_MAX_INFO_VAL, v, &flag);
  if (!flag) v[0] = '\0';
  MPI_Info_free(&used);
}

static lmpio_file unknown_fh;
static void open_unknown(void *arg) {
  MPI_Info info;
  MPI_Info_create(&info);
  set(info, "strping_unit", "65536");
  set(info, "access_style", "read_once");
  set(info, "romio_no_indep_rw", "true");
  set(info, "nc_var_align_size", "512");
  set(info, "cb_buffer_size", "1048576");
  set(info, "zzz_private", "1");
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, (const char *)arg, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &unknown_fh));
  MPI_Info_free(&info);
}
static void set_info_again(void *arg) {
  (void)arg;
  MPI_Info info;
  MPI_Info_create(&info);
  set(info, "strping_unit", "65536"); /* reported already: not again */
  set(info, "cb_bufer_size", "4096");  /* a new one */
  TL_OK(lmpio_file_set_info(unknown_fh, info));
  MPI_Info_free(&info);
}
static void open_quiet(void *arg) {
  MPI_Info info;
  MPI_Info_create(&info);
  set(info, "lmpio_hint_warnings", "disable");
  set(info, "romio_cb_wirte", "enable");
  lmpio_file fh;
  TL_OK(lmpio_file_open(MPI_COMM_WORLD, (const char *)arg, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
  char v[MPI_MAX_INFO_VAL + 1];
  info_value(fh, "lmpio_unknown_hints", v);
  TL_CHECK(strcmp(v, "romio_cb_wirte") == 0); /* listed all the same */
  TL_OK(lmpio_file_close(&fh));
  MPI_Info_free(&info);
}

/* Unknown keys are reported by rank 0, once per key, with the nearest known
 * key, and listed by get_info; reserved keys of others are not; the hint
 * lmpio_hint_warnings=disable silences the report. */
static void test_unknown_keys(void) {
  char *path = tl_path("unknown");
  char text[8192];
  capture_stderr(open_unknown, path, text, sizeof text);
  if (tl_rank == 0) {
    TL_CHECK(strstr(text, "lmpio: hint \"strping_unit\" is not known (did you mean striping_unit?)\n") != NULL);
    TL_CHECK(strstr(text, "lmpio: hint \"zzz_private\" is not known") != NULL);
    TL_CHECK(strstr(text, "access_style") == NULL && strstr(text, "romio_no_indep_rw") == NULL);
    TL_CHECK(strstr(text, "nc_var_align_size") == NULL && strstr(text, "cb_buffer_size") == NULL);
    if (tl_case_failed) fprintf(stderr, "stderr was:\n%s\n", text);
  } else {
    TL_CHECK(text[0] == '\0');
  }
  char v[MPI_MAX_INFO_VAL + 1];
  info_value(unknown_fh, "lmpio_unknown_hints", v);
  TL_CHECK(strcmp(v, "strping_unit,zzz_private") == 0 || strcmp(v, "zzz_private,strping_unit") == 0);
  capture_stderr(set_info_again, NULL, text, sizeof text);
  if (tl_rank == 0) {
    TL_CHECK(strstr(text, "strping_unit") == NULL);
    TL_CHECK(strstr(text, "lmpio: hint \"cb_bufer_size\" is not known (did you mean cb_buffer_size?)") != NULL);
    const char *first = strstr(text, "cb_bufer_size");
    TL_CHECK(first && !strstr(first + 1, "cb_bufer_size")); /* once */
    if (tl_case_failed) fprintf(stderr, "stderr was:\n%s\n", text);
  }
  info_value(unknown_fh, "lmpio_unknown_hints", v);
  TL_CHECK(strstr(v, "cb_bufer_size") != NULL && strstr(v, "strping_unit") != NULL);
  TL_OK(lmpio_file_close(&unknown_fh));
  capture_stderr(open_quiet, path, text, sizeof text);
  TL_CHECK(strstr(text, "romio_cb_wirte") == NULL);
  tl_unlink(path);
}

static void test_readme_table(void) {
  FILE *f = fopen("README.md", "r");
  if (!f) return; /* run from elsewhere: nothing to compare */
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  char row[512];
  for (int i = 0; lmpio__hints_row(i, row, sizeof row); i++) {
    if (!strstr(text, row)) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] README.md lacks the row (build/test/hints_test --table prints them):\n%s\n", tl_rank, row);
    }
  }
}

/* The README's table of environment variables is the table of hints.c,
 * and every getenv("LMPIO_...") of core/src is in it. */
static void test_environment_table(void) {
  FILE *f = fopen("README.md", "r");
  if (!f) return; /* run from elsewhere: nothing to compare */
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  char row[512];
  for (int i = 0; lmpio__hints_env_row(i, row, sizeof row); i++)
    if (!strstr(text, row)) {
      tl_case_failed = 1;
      fprintf(stderr, "[rank %d] README.md lacks the row (build/test/hints_test --table prints them):\n%s\n", tl_rank, row);
    }
  DIR *d = opendir("core/src");
  if (!d) return;
  struct dirent *e;
  static char src[1 << 18];
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 3 || strcmp(e->d_name + len - 2, ".c") != 0) continue;
    char path[300];
    snprintf(path, sizeof path, "core/src/%s", e->d_name);
    FILE *s = fopen(path, "r");
    if (!s) continue;
    size_t m = fread(src, 1, sizeof src - 1, s);
    src[m] = '\0';
    fclose(s);
    for (const char *p = src; (p = strstr(p, "getenv(\"LMPIO_")); p++) {
      char name[64];
      if (sscanf(p + 8, "%63[A-Z0-9_]", name) != 1) continue;
      int known = 0;
      for (int i = 0; !known && lmpio__hints_env_row(i, row, sizeof row); i++) {
        char cell[80];
        snprintf(cell, sizeof cell, "| `%s` |", name);
        known = strncmp(row, cell, strlen(cell)) == 0;
      }
      if (!known) {
        tl_case_failed = 1;
        fprintf(stderr, "[rank %d] %s reads %s, which hints.c's table of environment variables lacks\n", tl_rank,
                path, name);
      }
    }
  }
  closedir(d);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--table") == 0) {
    char row[512];
    printf("| key | meaning | default | values | same on every rank |\n| --- | --- | --- | --- | --- |\n");
    for (int i = 0; lmpio__hints_row(i, row, sizeof row); i++) printf("%s\n", row);
    printf("\n| variable | meaning | values |\n| --- | --- | --- |\n");
    for (int i = 0; lmpio__hints_env_row(i, row, sizeof row); i++) printf("%s\n", row);
    return 0;
  }
  tl_init(&argc, &argv);
  tl_run("invalid hint values are errors naming the key", test_invalid_values);
  tl_run("get_info reports the values in effect", test_values_in_effect);
  tl_run("mode hint values are case-insensitive", test_mode_case);
  tl_run("collective-buffering hints must match", test_must_agree);
  tl_run("README table of hints comes from the table", test_readme_table);
  tl_run("README table of environment variables comes from the table, which has every one the core reads",
         test_environment_table);
  tl_run("unknown hint keys are reported once and listed by get_info", test_unknown_keys);
  return tl_finish();
}
