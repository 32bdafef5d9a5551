/* An LD_PRELOAD interposer for the footprint test (tests/override/footprint_test.cc): every
 * path the process opens through the C library's open, open64 or openat goes to stderr as
 * "open PATH", so the test sees what start-up reads. Preloaded ahead of the drop-in, it
 * also catches the drop-in's own calls. It opens by the raw syscall rather than through
 * dlsym(RTLD_NEXT), which may allocate while the heap is starting. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void LogOpen(const char* path) {
  /* write, not stdio: the log allocates nothing. */
  if (write(STDERR_FILENO, "open ", 5) < 0) return;
  if (write(STDERR_FILENO, path, strlen(path)) < 0) return;
  (void)!write(STDERR_FILENO, "\n", 1);
}

static int OpenAt(int dir, const char* path, int flags, va_list args) {
  mode_t mode = 0;
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) mode = va_arg(args, mode_t);
  LogOpen(path);
  return (int)syscall(SYS_openat, dir, path, flags, mode);
}

int open(const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const int fd = OpenAt(AT_FDCWD, path, flags, args);
  va_end(args);
  return fd;
}

/* The same function under the large-file name, which programs built with
 * _FILE_OFFSET_BITS=64 call. */
int open64(const char* path, int flags, ...) __attribute__((alias("open")));

int openat(int dir, const char* path, int flags, ...) {
  va_list args;
  va_start(args, flags);
  const int fd = OpenAt(dir, path, flags, args);
  va_end(args);
  return fd;
}
