/*
 * slow-fuse: a FUSE filesystem mirroring the regular files of one directory ($SLOW_FUSE_SRC), whose
 * reads and writes are slow on purpose and whose file "held" can hang in the kernel on demand.
 * Built and started by test/helpers/slow-fuse.ts (compiled once per source text, cached).
 *
 *   $SLOW_FUSE_WRITE_DELAY_US, $SLOW_FUSE_READ_DELAY_US  every write / read of a mirrored file
 *                        sleeps this long first (default 0): an image file here behind a loop device
 *                        is a slow disk.
 *   $SLOW_FUSE_HOLD      while this path exists, a lookup/getattr of "/held" does not answer: the
 *                        process asking waits in the kernel for the answer, and once the request was
 *                        handed to this daemon not even SIGKILL ends it before the answer (a tool
 *                        stuck in uninterruptible sleep). Removing the file lets it answer.
 *
 *   $SLOW_FUSE_FAULTS    a file of lines "eio <start> <end>" / "hang <start> <end>" (bytes, end
 *                        exclusive), read at every read of a mirrored file: a read overlapping an
 *                        "eio" range fails with EIO; one overlapping a "hang" range waits until no
 *                        hang range overlaps it any more (edit or remove the file to let it go).
 *   $SLOW_FUSE_DIRECT_IO if set, files are opened with direct_io: no page cache in front of this
 *                        daemon, so every read of a loop device over an image here reaches it.
 *
 * Usage: slow-fuse <mountpoint> [fuse options...]  (runs in the foreground, multithreaded)
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <fuse.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static const char *src;
static const char *hold;
static const char *faults;
static int direct_io;

/* 'e' when [off, off+size) overlaps an "eio" range of $SLOW_FUSE_FAULTS, 'h' for a "hang" range, 0 otherwise. */
static char fault_at(off_t off, size_t size) {
  if (!faults) return 0;
  FILE *f = fopen(faults, "r");
  if (!f) return 0;
  char kind[8];
  long long start, end;
  char found = 0;
  while (fscanf(f, "%7s %lld %lld", kind, &start, &end) == 3) {
    if (off < end && (long long)(off + (off_t)size) > start) {
      found = kind[0] == 'h' ? 'h' : (found ? found : 'e');
      if (found == 'h') break;
    }
  }
  fclose(f);
  return found;
}
static useconds_t write_delay_us, read_delay_us;

static int real(char *out, const char *path) {
  if (snprintf(out, PATH_MAX, "%s%s", src, path) >= PATH_MAX) return -ENAMETOOLONG;
  return 0;
}

static int sf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  (void)fi;
  if (strcmp(path, "/held") == 0) {
    while (hold && access(hold, F_OK) == 0) usleep(10000);
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFREG | 0644;
    st->st_nlink = 1;
    return 0;
  }
  char p[PATH_MAX];
  int r = real(p, path);
  if (r) return r;
  return lstat(p, st) == -1 ? -errno : 0;
}

static int sf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
  (void)off; (void)fi; (void)flags;
  char p[PATH_MAX];
  int r = real(p, path);
  if (r) return r;
  DIR *d = opendir(p);
  if (!d) return -errno;
  struct dirent *e;
  while ((e = readdir(d))) fill(buf, e->d_name, NULL, 0, 0);
  closedir(d);
  return 0;
}

static int sf_open(const char *path, struct fuse_file_info *fi) {
  char p[PATH_MAX];
  int r = real(p, path);
  if (r) return r;
  int fd = open(p, fi->flags & ~(O_CREAT | O_EXCL | O_TRUNC));
  if (fd == -1) return -errno;
  fi->fh = fd;
  if (direct_io) fi->direct_io = 1;
  return 0;
}

static int sf_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)path;
  if (read_delay_us) usleep(read_delay_us);
  char fault;
  while ((fault = fault_at(off, size)) == 'h') usleep(10000);
  if (fault == 'e') return -EIO;
  ssize_t n = pread(fi->fh, buf, size, off);
  return n == -1 ? -errno : (int)n;
}

static int sf_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  (void)path;
  if (write_delay_us) usleep(write_delay_us);
  ssize_t n = pwrite(fi->fh, buf, size, off);
  return n == -1 ? -errno : (int)n;
}

static int sf_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
  (void)path;
  return (datasync ? fdatasync(fi->fh) : fsync(fi->fh)) == -1 ? -errno : 0;
}

static int sf_release(const char *path, struct fuse_file_info *fi) {
  (void)path;
  close(fi->fh);
  return 0;
}

static int sf_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
  if (fi) return ftruncate(fi->fh, size) == -1 ? -errno : 0;
  char p[PATH_MAX];
  int r = real(p, path);
  if (r) return r;
  return truncate(p, size) == -1 ? -errno : 0;
}

/* Zeroing and discards (fallocate ZERO_RANGE / PUNCH_HOLE from the loop device) are passed on at once, not delayed. */
static int sf_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi) {
  (void)path;
  return fallocate(fi->fh, mode, off, len) == -1 ? -errno : 0;
}

static int sf_statfs(const char *path, struct statvfs *st) {
  (void)path;
  return statvfs(src, st) == -1 ? -errno : 0;
}

static const struct fuse_operations ops = {
  .getattr = sf_getattr,
  .readdir = sf_readdir,
  .open = sf_open,
  .read = sf_read,
  .write = sf_write,
  .fsync = sf_fsync,
  .release = sf_release,
  .truncate = sf_truncate,
  .statfs = sf_statfs,
  .fallocate = sf_fallocate,
};

int main(int argc, char *argv[]) {
  src = getenv("SLOW_FUSE_SRC");
  hold = getenv("SLOW_FUSE_HOLD");
  faults = getenv("SLOW_FUSE_FAULTS");
  direct_io = getenv("SLOW_FUSE_DIRECT_IO") != NULL;
  const char *w = getenv("SLOW_FUSE_WRITE_DELAY_US"), *r = getenv("SLOW_FUSE_READ_DELAY_US");
  write_delay_us = w ? (useconds_t)strtoul(w, NULL, 10) : 0;
  read_delay_us = r ? (useconds_t)strtoul(r, NULL, 10) : 0;
  if (!src || argc < 2) {
    fprintf(stderr, "usage: SLOW_FUSE_SRC=<dir> slow-fuse <mountpoint> [fuse options]\n");
    return 2;
  }
  return fuse_main(argc, argv, &ops, NULL);
}
