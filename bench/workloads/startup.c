/* The start-up footprint: a C program that calls malloc once and printf once. Its peak RSS
 * under each allocator is what the allocator costs a program that barely allocates (issue
 * 12's bar: glibc's + 0.5 MiB), and compare.sh subtracts it from the other workloads' peaks
 * to show what their heaps alone cost. The scale argument is accepted and ignored. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  (void)argv;
  char* line = malloc(64);
  if (line == NULL) return 1;
  snprintf(line, 64, "startup: %d argument(s)", argc - 1);
  printf("%s\n", line);
  free(line);
  return 0;
}
