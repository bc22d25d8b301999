/* The file handle's lifecycle: open, close, delete; amode; hints; size,
 * preallocation, sync and atomicity. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_IND_RD_BUFFER_SIZE 4194304
#define DEFAULT_IND_WR_BUFFER_SIZE 524288
#define DEFAULT_CONVERSION_BUFFER_SIZE 4194304
#define DEFAULT_CB_BUFFER_SIZE 16777216

long long lmpio__hash(const char *s) {
  unsigned long long h = 1469598103934665603ULL; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return (long long)(h >> 2);
}

/* ROMIO-style "ufs:" prefixes name the file system; the path follows. */
static const char *strip_prefix(const char *name) {
  if (strncmp(name, "ufs:", 4) == 0) return name + 4;
  if (strncmp(name, "nfs:", 4) == 0) return name + 4;
  return name;
}

static int check_amode(int amode, const char *call) {
  int acc = ((amode & MPI_MODE_RDONLY) ? 1 : 0) + ((amode & MPI_MODE_RDWR) ? 1 : 0) +
            ((amode & MPI_MODE_WRONLY) ? 1 : 0);
  int known = MPI_MODE_RDONLY | MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE |
              MPI_MODE_EXCL | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN |
              MPI_MODE_SEQUENTIAL | MPI_MODE_APPEND;
  if (amode & ~known) return lmpio__err(MPI_ERR_AMODE, call, "unknown bits 0x%x in amode", amode & ~known);
  if (acc != 1)
    return lmpio__err(MPI_ERR_AMODE, call, "amode must have exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY");
  if ((amode & MPI_MODE_RDONLY) && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
    return lmpio__err(MPI_ERR_AMODE, call, "MPI_MODE_CREATE and MPI_MODE_EXCL are not allowed with MPI_MODE_RDONLY");
  if ((amode & MPI_MODE_RDWR) && (amode & MPI_MODE_SEQUENTIAL))
    return lmpio__err(MPI_ERR_AMODE, call, "MPI_MODE_SEQUENTIAL is not allowed with MPI_MODE_RDWR");
  return MPI_SUCCESS;
}

static int parse_size_hint(MPI_Info info, const char *key, MPI_Offset *out) {
  char val[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  if (MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag) != MPI_SUCCESS || !flag) return 0;
  char *end;
  long long v = strtoll(val, &end, 10);
  if (end == val || *end || v <= 0) return 0; /* hints may be ignored */
  *out = v;
  return 1;
}

static void parse_ds_hint(MPI_Info info, const char *key, int *out) {
  char val[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  if (MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag) != MPI_SUCCESS || !flag) return;
  if (!strcmp(val, "enable")) *out = 1;
  else if (!strcmp(val, "disable")) *out = 0;
  else if (!strcmp(val, "automatic")) *out = 2;
}

void lmpio__file_apply_hints(lmpio_file fh, MPI_Info info) {
  if (info == MPI_INFO_NULL) return;
  parse_size_hint(info, "ind_rd_buffer_size", &fh->ind_rd_buffer_size);
  parse_size_hint(info, "ind_wr_buffer_size", &fh->ind_wr_buffer_size);
  parse_size_hint(info, "lmpio_conversion_buffer_size", &fh->conv_buffer_size);
  parse_ds_hint(info, "romio_ds_read", &fh->ds_read);
  parse_ds_hint(info, "romio_ds_write", &fh->ds_write);
  parse_ds_hint(info, "romio_cb_read", &fh->cb_read);
  parse_ds_hint(info, "romio_cb_write", &fh->cb_write);
  parse_size_hint(info, "cb_buffer_size", &fh->cb_buffer_size);
  parse_size_hint(info, "cb_nodes", &fh->cb_nodes);
}

static int open_fd(const char *path, int amode, int create, int *readable) {
  int flags = (amode & MPI_MODE_RDONLY) ? O_RDONLY : O_RDWR;
  if (create) flags |= O_CREAT | ((amode & MPI_MODE_EXCL) ? O_EXCL : 0);
  int fd;
  do fd = open(path, flags | O_CLOEXEC, 0666);
  while (fd < 0 && errno == EINTR);
  *readable = 1;
  /* Write-only files are opened read-write for data sieving when allowed. */
  if (fd < 0 && errno == EACCES && (amode & MPI_MODE_WRONLY)) {
    do fd = open(path, (flags & ~O_RDWR) | O_WRONLY | O_CLOEXEC, 0666);
    while (fd < 0 && errno == EINTR);
    *readable = 0;
  }
  /* A directory opens read-only but is not a file: refuse it as open(2)
   * does for writers. */
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    errno = EISDIR;
    fd = -1;
  }
  return fd;
}

int lmpio_file_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info,
                    lmpio_file *fhp) {
  const char *call = "lmpio_file_open";
  if (!fhp) return lmpio__err(MPI_ERR_ARG, call, "fh is NULL");
  *fhp = LMPIO_FILE_NULL;
  int inter = 0;
  if (comm == MPI_COMM_NULL || MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return lmpio__err(MPI_ERR_COMM, call, "invalid or inter-communicator");
  int rc = MPI_SUCCESS;
  if (!filename || !*filename) rc = lmpio__err(MPI_ERR_BAD_FILE, call, "empty or NULL file name");
  else rc = check_amode(amode, call);
  long long same = filename ? lmpio__hash(filename) ^ ((long long)amode << 40) : 0;
  rc = lmpio__agree(comm, rc, rc == MPI_SUCCESS ? same : 0, call);
  if (rc == MPI_ERR_NOT_SAME)
    lmpio__err(rc, call, "ranks passed different file names or amodes for \"%s\"", filename);
  if (rc != MPI_SUCCESS) return rc;

  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const char *path = strip_prefix(filename);
  int fd = -1, readable = 1, create = (amode & MPI_MODE_CREATE) != 0;
  /* Rank 0 creates the file; the others open it once it exists. */
  if (create) {
    int e = 0;
    if (rank == 0) {
      fd = open_fd(path, amode, 1, &readable);
      e = fd < 0 ? errno : 0;
    }
    MPI_Bcast(&e, 1, MPI_INT, 0, comm);
    if (e == 0 && rank != 0) fd = open_fd(path, amode & ~MPI_MODE_EXCL, 0, &readable);
    else if (e != 0) errno = e;
  } else {
    fd = open_fd(path, amode, 0, &readable);
  }
  rc = fd < 0 ? lmpio__err_errno(errno, call, "cannot open", path) : MPI_SUCCESS;

  lmpio_file fh = NULL;
  if (rc == MPI_SUCCESS) {
    fh = calloc(1, sizeof *fh);
    if (fh) {
      fh->comm = MPI_COMM_NULL;
      fh->sh_fd = -1;
      fh->path = strdup(path);
    }
    if (!fh || !fh->path) rc = lmpio__err(MPI_ERR_NO_MEM, call, "out of memory");
  }
  if (rc == MPI_SUCCESS) {
    fh->fd = fd;
    fh->amode = amode;
    fh->fd_readable = readable;
    fh->fd_in_memory = lmpio__posix_in_memory(fd);
    fh->rank = rank;
    fh->size = size;
    fh->ind_rd_buffer_size = DEFAULT_IND_RD_BUFFER_SIZE;
    fh->ind_wr_buffer_size = DEFAULT_IND_WR_BUFFER_SIZE;
    fh->ds_read = fh->ds_write = 2;
    fh->conv_buffer_size = DEFAULT_CONVERSION_BUFFER_SIZE;
    fh->cb_read = fh->cb_write = 2;
    fh->cb_buffer_size = DEFAULT_CB_BUFFER_SIZE;
    fh->cb_nodes = fh->size;
    lmpio__file_apply_hints(fh, info);
    rc = lmpio__view_build(&fh->view, 0, MPI_BYTE, MPI_BYTE, "native", call);
  }
  if (rc == MPI_SUCCESS && (amode & MPI_MODE_APPEND)) {
    struct stat st;
    if (fstat(fd, &st) < 0) rc = lmpio__err_errno(errno, call, "cannot stat", path);
    else fh->fp = st.st_size; /* the default view counts bytes */
  }
  rc = lmpio__agree(comm, rc, 0, call);
  if (rc == MPI_SUCCESS && MPI_Comm_dup(comm, &fh->comm) != MPI_SUCCESS)
    rc = lmpio__err(MPI_ERR_COMM, call, "cannot duplicate the communicator");
  if (rc == MPI_SUCCESS) { /* the same answer on every rank: both calls are collective */
    MPI_Comm node;
    int n = 0;
    if (MPI_Comm_split_type(fh->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
      MPI_Comm_size(node, &n);
      MPI_Comm_free(&node);
    }
    int all = n == size, every = 0;
    MPI_Allreduce(&all, &every, 1, MPI_INT, MPI_LAND, fh->comm);
    fh->one_node = every;
  }
  if (rc == MPI_SUCCESS) rc = lmpio__agree(comm, lmpio__shared_init(fh, fh->fp, call), 0, call);
  if (rc != MPI_SUCCESS) {
    if (fd >= 0) close(fd);
    if (fh) {
      if (fh->comm != MPI_COMM_NULL) MPI_Comm_free(&fh->comm);
      free(fh->sh_path);
      lmpio__view_free(&fh->view);
      free(fh->path);
      free(fh);
    }
    return rc;
  }
  *fhp = fh;
  return MPI_SUCCESS;
}

int lmpio_file_close(lmpio_file *fhp) {
  const char *call = "lmpio_file_close";
  if (!fhp || *fhp == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  lmpio_file fh = *fhp;
  int rc = MPI_SUCCESS;
  if (close(fh->fd) < 0 && errno != EINTR) rc = lmpio__err_errno(errno, call, "cannot close", fh->path);
  /* Agreement doubles as the barrier before a delete-on-close. */
  rc = lmpio__agree(fh->comm, rc, 0, call);
  if (fh->amode & MPI_MODE_DELETE_ON_CLOSE) {
    /* Every rank has closed; the file is gone when close returns anywhere. */
    int drc = MPI_SUCCESS;
    if (fh->rank == 0 && unlink(fh->path) < 0 && errno != ENOENT)
      drc = lmpio__err_errno(errno, call, "cannot delete", fh->path);
    drc = lmpio__agree(fh->comm, drc, 0, call);
    if (rc == MPI_SUCCESS) rc = drc;
  }
  lmpio__shared_free(fh);
  lmpio__view_free(&fh->view);
  MPI_Comm_free(&fh->comm);
  free(fh->path);
  free(fh);
  *fhp = LMPIO_FILE_NULL;
  return rc;
}

int lmpio_file_delete(const char *filename, MPI_Info info) {
  const char *call = "lmpio_file_delete";
  (void)info;
  if (!filename || !*filename) return lmpio__err(MPI_ERR_BAD_FILE, call, "empty or NULL file name");
  const char *path = strip_prefix(filename);
  if (unlink(path) < 0) return lmpio__err_errno(errno, call, "cannot delete", path);
  return MPI_SUCCESS;
}

static int check_fh(const struct lmpio_file_s *fh, const char *call) {
  if (fh == LMPIO_FILE_NULL) return lmpio__err(MPI_ERR_FILE, call, "file handle is LMPIO_FILE_NULL");
  return MPI_SUCCESS;
}

/* set_size and preallocate: arguments agreed, rank 0 acts, outcome agreed. */
static int resize(lmpio_file fh, MPI_Offset size, int grow_only, const char *call) {
  int rc = MPI_SUCCESS;
  if (size < 0) rc = lmpio__err(MPI_ERR_ARG, call, "negative size %lld", (long long)size);
  else if (fh->amode & MPI_MODE_RDONLY)
    rc = lmpio__err(MPI_ERR_READ_ONLY, call, "file \"%s\" was opened MPI_MODE_RDONLY", fh->path);
  else if (fh->amode & MPI_MODE_SEQUENTIAL)
    rc = lmpio__err(MPI_ERR_UNSUPPORTED_OPERATION, call, "not allowed on file \"%s\" opened MPI_MODE_SEQUENTIAL", fh->path);
  rc = lmpio__agree(fh->comm, rc, rc == MPI_SUCCESS ? size : 0, call);
  if (rc != MPI_SUCCESS) return rc;
  if (fh->rank == 0) {
    struct stat st;
    if (fstat(fh->fd, &st) < 0) {
      rc = lmpio__err_errno(errno, call, "cannot stat", fh->path);
    } else if (!grow_only) {
      if (st.st_size != size && ftruncate(fh->fd, (off_t)size) < 0)
        rc = lmpio__err_errno(errno, call, "cannot truncate", fh->path);
    } else if (size > st.st_size) {
      int e = posix_fallocate(fh->fd, 0, (off_t)size);
      if (e != 0) rc = lmpio__err_errno(e, call, "cannot preallocate", fh->path);
    }
  }
  return lmpio__agree(fh->comm, rc, 0, call);
}

int lmpio_file_set_size(lmpio_file fh, MPI_Offset size) {
  int rc = check_fh(fh, "lmpio_file_set_size");
  return rc ? rc : resize(fh, size, 0, "lmpio_file_set_size");
}

int lmpio_file_preallocate(lmpio_file fh, MPI_Offset size) {
  int rc = check_fh(fh, "lmpio_file_preallocate");
  return rc ? rc : resize(fh, size, 1, "lmpio_file_preallocate");
}

int lmpio_file_get_size(lmpio_file fh, MPI_Offset *size) {
  const char *call = "lmpio_file_get_size";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (!size) return lmpio__err(MPI_ERR_ARG, call, "size is NULL");
  struct stat st;
  if (fstat(fh->fd, &st) < 0) return lmpio__err_errno(errno, call, "cannot stat", fh->path);
  *size = st.st_size;
  return MPI_SUCCESS;
}

int lmpio_file_get_group(lmpio_file fh, MPI_Group *group) {
  const char *call = "lmpio_file_get_group";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (!group) return lmpio__err(MPI_ERR_ARG, call, "group is NULL");
  return MPI_Comm_group(fh->comm, group) == MPI_SUCCESS ? MPI_SUCCESS
                                                         : lmpio__err(MPI_ERR_OTHER, call, "MPI_Comm_group failed");
}

int lmpio_file_get_amode(lmpio_file fh, int *amode) {
  const char *call = "lmpio_file_get_amode";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (!amode) return lmpio__err(MPI_ERR_ARG, call, "amode is NULL");
  *amode = fh->amode;
  return MPI_SUCCESS;
}

int lmpio_file_set_info(lmpio_file fh, MPI_Info info) {
  const char *call = "lmpio_file_set_info";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  rc = lmpio__agree(fh->comm, MPI_SUCCESS, 0, call);
  if (rc == MPI_SUCCESS) lmpio__file_apply_hints(fh, info);
  return rc;
}

int lmpio_file_get_info(lmpio_file fh, MPI_Info *info_used) {
  const char *call = "lmpio_file_get_info";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (!info_used) return lmpio__err(MPI_ERR_ARG, call, "info_used is NULL");
  static const char *ds[] = {"disable", "enable", "automatic"};
  char v[64];
  MPI_Info info;
  if (MPI_Info_create(&info) != MPI_SUCCESS) return lmpio__err(MPI_ERR_INFO, call, "MPI_Info_create failed");
  snprintf(v, sizeof v, "%lld", (long long)fh->ind_rd_buffer_size);
  MPI_Info_set(info, "ind_rd_buffer_size", v);
  snprintf(v, sizeof v, "%lld", (long long)fh->ind_wr_buffer_size);
  MPI_Info_set(info, "ind_wr_buffer_size", v);
  snprintf(v, sizeof v, "%lld", (long long)fh->conv_buffer_size);
  MPI_Info_set(info, "lmpio_conversion_buffer_size", v);
  MPI_Info_set(info, "romio_ds_read", ds[fh->ds_read]);
  MPI_Info_set(info, "romio_ds_write", ds[fh->ds_write]);
  MPI_Info_set(info, "romio_cb_read", ds[fh->cb_read]);
  MPI_Info_set(info, "romio_cb_write", ds[fh->cb_write]);
  snprintf(v, sizeof v, "%lld", (long long)fh->cb_buffer_size);
  MPI_Info_set(info, "cb_buffer_size", v);
  snprintf(v, sizeof v, "%lld", (long long)fh->cb_nodes);
  MPI_Info_set(info, "cb_nodes", v);
  *info_used = info;
  return MPI_SUCCESS;
}

int lmpio_file_set_atomicity(lmpio_file fh, int flag) {
  const char *call = "lmpio_file_set_atomicity";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  rc = lmpio__agree(fh->comm, MPI_SUCCESS, flag != 0, call);
  if (rc == MPI_SUCCESS) fh->atomic = flag != 0;
  return rc;
}

int lmpio_file_get_atomicity(lmpio_file fh, int *flag) {
  const char *call = "lmpio_file_get_atomicity";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (!flag) return lmpio__err(MPI_ERR_ARG, call, "flag is NULL");
  *flag = fh->atomic;
  return MPI_SUCCESS;
}

int lmpio_file_sync(lmpio_file fh) {
  const char *call = "lmpio_file_sync";
  int rc = check_fh(fh, call);
  if (rc) return rc;
  if (fsync(fh->fd) < 0) rc = lmpio__err_errno(errno, call, "fsync of", fh->path);
  return lmpio__agree(fh->comm, rc, 0, call);
}
