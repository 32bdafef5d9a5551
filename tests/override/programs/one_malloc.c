/* The drop-in's start-up footprint (tests/override/footprint_test.cc): a trivial C program,
 * one malloc and one printf, that then writes its peak resident size (VmHWM of
 * /proc/self/status, read without stdio so the measurement allocates nothing) to stderr as
 * "VmHWM <KiB>". With the argument "text" it writes instead, for each executable mapping of
 * libmemarena_malloc.so, "text <file offset, hex> <resident KiB>": which of the library's
 * code segments the program touched; and the same as "rodata" lines for its read-only
 * mappings (the loader's tables, the constants, RELRO). With "data" it writes "data <pages resident> <pages>"
 * for the library's writable segment (RELRO, .data, .bss): how many of its pages count in
 * the program's RSS. With "anon" it writes "anon <size KiB> <resident KiB>" for each
 * anonymous mapping (the heap's reservation, the pagemap's leaf, the metadata chunk). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
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

/* One "text" line per executable mapping of the library and one "rodata" line per read-only
 * one, from /proc/self/smaps. */
static int ReportLibraryText(void) {
  if (ReadFile("/proc/self/smaps", smaps, sizeof smaps) == 0) return 5;
  for (char* line = smaps; line != NULL && *line != '\0';) {
    char* next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    unsigned long offset = 0;
    char permissions[8] = "";
    if (strstr(line, "libmemarena_malloc") != NULL &&
        sscanf(line, "%*[0-9a-f]-%*[0-9a-f] %7s %lx", permissions, &offset) == 2 &&
        (strcmp(permissions, "r-xp") == 0 || strcmp(permissions, "r--p") == 0)) {
      const char* rss = next != NULL ? strstr(next, "\nRss:") : NULL;
      if (rss == NULL) return 6;
      printf("%s %lx %ld\n", permissions[2] == 'x' ? "text" : "rodata", offset,
             strtol(rss + 5, NULL, 10));
    }
    line = next;
  }
  return 0;
}

/* One "anon" line per anonymous mapping (no path, not [heap] or [stack]), from smaps. */
static int ReportAnonymousMappings(void) {
  if (ReadFile("/proc/self/smaps", smaps, sizeof smaps) == 0) return 5;
  for (char* line = smaps; line != NULL && *line != '\0';) {
    char* next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    char path[8] = "";
    unsigned long lo = 0;
    unsigned long hi = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %7s", &lo, &hi, path) >= 2 && path[0] == '\0') {
      const char* rss = next != NULL ? strstr(next, "\nRss:") : NULL;
      if (rss == NULL) return 6;
      printf("anon %lu %ld\n", (hi - lo) / 1024, strtol(rss + 5, NULL, 10));
    }
    line = next;
  }
  return 0;
}

/* dl_iterate_phdr's callback: counts the pages of the library's writable PT_LOAD segment
 * that /proc/self/pagemap (readable without privileges) marks present (bit 63) and mapped
 * by this process alone (bit 56). The second leaves out the shared zero page, which a read
 * of untouched .bss maps and RSS does not count. */
static int CountDataPages(struct dl_phdr_info* info, size_t size, void* out) {
  (void)size;
  if (strstr(info->dlpi_name, "libmemarena_malloc") == NULL) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* segment = &info->dlpi_phdr[i];
    if (segment->p_type != PT_LOAD || (segment->p_flags & PF_W) == 0) continue;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t start = (info->dlpi_addr + segment->p_vaddr) & ~(page - 1);
    const uintptr_t end = (info->dlpi_addr + segment->p_vaddr + segment->p_memsz + page - 1) &
                          ~(page - 1);
    const int pagemap = open("/proc/self/pagemap", O_RDONLY);
    if (pagemap < 0) {
      perror("one_malloc data: cannot open /proc/self/pagemap (a kernel without it, or a "
             "sandbox that hides it)");
      return 7;
    }
    long resident = 0;
    for (uintptr_t address = start; address < end; address += page) {
      uint64_t entry = 0;
      if (pread(pagemap, &entry, sizeof entry, (off_t)(address / page * sizeof entry)) !=
          (ssize_t)sizeof entry) {
        perror("one_malloc data: cannot read /proc/self/pagemap");
        close(pagemap);
        return 8;
      }
      resident += (long)((entry >> 63) & (entry >> 56) & 1);
    }
    close(pagemap);
    ((long*)out)[0] = resident;
    ((long*)out)[1] = (long)((end - start) / page);
    return 1;
  }
  fprintf(stderr, "one_malloc data: libmemarena_malloc has no writable PT_LOAD segment\n");
  return 9;
}

/* The "data" line: the library's writable segment, pages resident and pages in all. */
static int ReportLibraryData(void) {
  long pages[2] = {0, 0};
  const int found = dl_iterate_phdr(CountDataPages, pages);
  if (found == 0) {
    fprintf(stderr, "one_malloc data: libmemarena_malloc is not loaded (run it with "
                    "LD_PRELOAD=libmemarena_malloc.so)\n");
    return 10;
  }
  if (found != 1) return found;
  printf("data %ld %ld\n", pages[0], pages[1]);
  return 0;
}

int main(int argc, char** argv) {
  char* text = malloc(32);
  if (text == NULL) return 1;
  strcpy(text, "one malloc, one printf");
  printf("%s\n", text);
  free(text);
  if (argc > 1 && strcmp(argv[1], "text") == 0) return ReportLibraryText();
  if (argc > 1 && strcmp(argv[1], "data") == 0) return ReportLibraryData();
  if (argc > 1 && strcmp(argv[1], "anon") == 0) return ReportAnonymousMappings();

  char status[16384];
  if (ReadFile("/proc/self/status", status, sizeof status) == 0) return 2;
  const char* line = strstr(status, "VmHWM:");
  if (line == NULL) return 3;
  char report[64];
  const int size = snprintf(report, sizeof report, "VmHWM %ld\n", strtol(line + 6, NULL, 10));
  return write(STDERR_FILENO, report, (size_t)size) == size ? 0 : 4;
}
