/* The drop-in's start-up footprint (tests/override/footprint_test.cc): a trivial C program,
 * one malloc and one printf, that then writes its peak resident size (VmHWM of
 * /proc/self/status, read without stdio so the measurement allocates nothing) to stderr as
 * "VmHWM <KiB>". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  char* text = malloc(32);
  if (text == NULL) return 1;
  strcpy(text, "one malloc, one printf");
  printf("%s\n", text);
  free(text);

  char status[16384];
  const int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0) return 2;
  size_t length = 0;
  ssize_t got = 0;
  while (length < sizeof status - 1 &&
         (got = read(fd, status + length, sizeof status - 1 - length)) > 0) {
    length += (size_t)got;
  }
  close(fd);
  status[length] = '\0';
  const char* line = strstr(status, "VmHWM:");
  if (line == NULL) return 3;
  char report[64];
  const int size = snprintf(report, sizeof report, "VmHWM %ld\n", strtol(line + 6, NULL, 10));
  return write(STDERR_FILENO, report, (size_t)size) == size ? 0 : 4;
}
