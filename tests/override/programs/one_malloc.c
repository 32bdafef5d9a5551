/* The drop-in's start-up footprint (tests/override/footprint_test.cc): a trivial C program,
 * one malloc and one printf, that then writes its peak resident size (VmHWM of
 * /proc/self/status, read without stdio so the measurement allocates nothing) to stderr as
 * "VmHWM <KiB>". With the argument "text" it writes instead, for each executable mapping of
 * libmemarena_malloc.so, "text <file offset, hex> <resident KiB>": which of the library's
 * code segments the program touched. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char smaps[1 << 18];

/* Reads the whole of `path` into `buffer` (NUL-terminated); 0 when it cannot. */
static size_t ReadFile(const char* path, char* buffer, size_t capacity) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  size_t length = 0;
  ssize_t got = 0;
  while (length < capacity - 1 &&
         (got = read(fd, buffer + length, capacity - 1 - length)) > 0) {
    length += (size_t)got;
  }
  close(fd);
  buffer[length] = '\0';
  return length;
}

/* One "text" line per executable mapping of the library, from /proc/self/smaps. */
static int ReportLibraryText(void) {
  if (ReadFile("/proc/self/smaps", smaps, sizeof smaps) == 0) return 5;
  for (char* line = smaps; line != NULL && *line != '\0';) {
    char* next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    unsigned long offset = 0;
    char permissions[8] = "";
    if (strstr(line, "libmemarena_malloc") != NULL &&
        sscanf(line, "%*[0-9a-f]-%*[0-9a-f] %7s %lx", permissions, &offset) == 2 &&
        strcmp(permissions, "r-xp") == 0) {
      const char* rss = next != NULL ? strstr(next, "\nRss:") : NULL;
      if (rss == NULL) return 6;
      printf("text %lx %ld\n", offset, strtol(rss + 5, NULL, 10));
    }
    line = next;
  }
  return 0;
}

int main(int argc, char** argv) {
  char* text = malloc(32);
  if (text == NULL) return 1;
  strcpy(text, "one malloc, one printf");
  printf("%s\n", text);
  free(text);
  if (argc > 1 && strcmp(argv[1], "text") == 0) return ReportLibraryText();

  char status[16384];
  if (ReadFile("/proc/self/status", status, sizeof status) == 0) return 2;
  const char* line = strstr(status, "VmHWM:");
  if (line == NULL) return 3;
  char report[64];
  const int size = snprintf(report, sizeof report, "VmHWM %ld\n", strtol(line + 6, NULL, 10));
  return write(STDERR_FILENO, report, (size_t)size) == size ? 0 : 4;
}
