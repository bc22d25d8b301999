/* Choosing a file-system driver (driver.h): by the name's prefix, as ROMIO
 * spells file systems, or by what statfs and the mount table say of an open
 * descriptor.  The hint lmpio_fs_driver and the agreement across ranks are
 * applied by open (file.c). */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int lmpio__driver_unlock_plain(int fd, int wrote, MPI_Offset off, MPI_Offset len) {
  (void)wrote; /* the kernel or the lock manager makes the bytes visible */
  return lmpio__os_unlock(fd, off, len);
}

const lmpio__driver *lmpio__driver_by_id(int id) {
  static const lmpio__driver *const all[LMPIO__FS_COUNT] = {&lmpio__driver_local, &lmpio__driver_coherent,
                                                           &lmpio__driver_caching, &lmpio__driver_stream};
  return id >= 0 && id < LMPIO__FS_COUNT ? all[id] : &lmpio__driver_local;
}

/* ROMIO's prefixes, and what each file system's clients guarantee. */
static const struct {
  const char *prefix;
  int id;
} prefixes[] = {
    {"ufs:", LMPIO__FS_LOCAL},        {"xfs:", LMPIO__FS_LOCAL},      {"testfs:", LMPIO__FS_LOCAL},
    {"nfs:", LMPIO__FS_CACHING},      {"quobytefs:", LMPIO__FS_CACHING},
    {"lustre:", LMPIO__FS_COHERENT},  {"gpfs:", LMPIO__FS_COHERENT},  {"pvfs2:", LMPIO__FS_COHERENT},
    {"panfs:", LMPIO__FS_COHERENT},   {"beegfs:", LMPIO__FS_COHERENT}, {"daos:", LMPIO__FS_COHERENT},
    {"ime:", LMPIO__FS_COHERENT},     {"cephfs:", LMPIO__FS_COHERENT},
};

const char *lmpio__driver_prefix(const char *name, int *id, char *why, size_t n) {
  *id = -1;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
    size_t len = strlen(prefixes[i].prefix);
    if (strncasecmp(name, prefixes[i].prefix, len) != 0) continue; /* (any case, as ROMIO takes them) */
    *id = prefixes[i].id;
    snprintf(why, n, "the file name's prefix \"%.*s\"", (int)len, name);
    return name + len;
  }
  return name;
}

/* statfs magic numbers (linux/magic.h and the file systems' own headers). */
static const struct {
  long magic;
  const char *name;
  int id;
} types[] = {
    {0xEF53, "ext2/3/4", LMPIO__FS_LOCAL},       {0x58465342, "xfs", LMPIO__FS_LOCAL},
    {0x9123683E, "btrfs", LMPIO__FS_LOCAL},      {0x01021994, "tmpfs", LMPIO__FS_LOCAL},
    {(long)0x858458f6, "ramfs", LMPIO__FS_LOCAL}, {0x2fc12fc1, "zfs", LMPIO__FS_LOCAL},
    {(long)0xF2F52010, "f2fs", LMPIO__FS_LOCAL},  {0x794c7630, "overlayfs", LMPIO__FS_LOCAL},
    {0x0BD00BD0, "Lustre", LMPIO__FS_COHERENT},  {0x47504653, "GPFS", LMPIO__FS_COHERENT},
    {0x19830326, "BeeGFS", LMPIO__FS_COHERENT},  {0x00c36400, "CephFS", LMPIO__FS_COHERENT},
    {0x20030528, "PVFS2/OrangeFS", LMPIO__FS_COHERENT}, {(long)0xAAD7AAEA, "PanFS", LMPIO__FS_COHERENT},
    {0x01161970, "GFS2", LMPIO__FS_COHERENT},    {0x7461636f, "OCFS2", LMPIO__FS_COHERENT},
    {0x6969, "NFS", LMPIO__FS_CACHING},          {0x517B, "SMB", LMPIO__FS_CACHING},
    {(long)0xFF534D42, "CIFS", LMPIO__FS_CACHING}, {(long)0xFE534D42, "SMB2", LMPIO__FS_CACHING},
    {0x01021997, "9p", LMPIO__FS_CACHING},       {0x5346414F, "AFS", LMPIO__FS_CACHING},
    {0x73757245, "Coda", LMPIO__FS_CACHING},     {0x65735546, "FUSE", LMPIO__FS_CACHING},
};

int lmpio__driver_of_fd(int fd, char *why, size_t n) {
  long magic = 0;
  char type[256];
  if (lmpio__os_fs_type(fd, &magic, type, sizeof type) < 0) {
    snprintf(why, n, "statfs failed: taken as a local file system");
    return LMPIO__FS_LOCAL;
  }
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    if ((long)(unsigned)types[i].magic != (long)(unsigned)magic) continue;
    if (types[i].id == LMPIO__FS_CACHING)
      snprintf(why, n, "statfs type 0x%lx (%s%s%s): its clients cache pages and attributes", (unsigned long)magic,
               types[i].name, type[0] ? ", mounted as " : "", type);
    else
      snprintf(why, n, "statfs type 0x%lx (%s%s%s)", (unsigned long)magic, types[i].name,
               type[0] ? ", mounted as " : "", type);
    return types[i].id;
  }
  snprintf(why, n, "statfs type 0x%lx (%s) is not known: taken as local (hint lmpio_fs_driver=caching if its clients cache)",
           (unsigned long)magic, type[0] ? type : "unnamed");
  return LMPIO__FS_LOCAL;
}
