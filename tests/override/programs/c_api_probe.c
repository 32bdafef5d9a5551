/* The C API from C, linked three ways: against libmemarena_malloc.so, against the link-time
 * override, or not at all and started under LD_PRELOAD (the weak declarations then bind to
 * the preloaded library). The output is the same in all three. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memarena/c_api.h"

#pragma weak memarena_get_stats
#pragma weak memarena_release_unused_spans
#pragma weak memarena_set_ceiling
#pragma weak memarena_ceiling
#pragma weak memarena_reset_peak_stats

#define MIB ((size_t)1 << 20)

int main(void) {
  if (memarena_get_stats == NULL) {
    printf("c-api: memarena is not loaded\n");
    return 1;
  }
  memarena_stats before, during, after;
  if (memarena_get_stats(&before) != 0 || memarena_get_stats(NULL) == 0) return 1;

  char* block = malloc(16 * MIB);
  memset(block, 1, 16 * MIB);
  memarena_get_stats(&during);
  const int counted = during.bytes_in_use >= before.bytes_in_use + 16 * MIB &&
                      during.num_allocs > before.num_allocs;
  free(block);
  const size_t released = memarena_release_unused_spans();
  memarena_get_stats(&after);
  memarena_stats reset;
  memarena_reset_peak_stats();
  memarena_get_stats(&reset);
  const int peak_reset = during.peak_bytes_held >= before.bytes_held + 16 * MIB &&
                         reset.peak_bytes_held == reset.bytes_held &&
                         reset.peak_bytes_in_use == reset.bytes_in_use;

  const int limit_set = memarena_set_ceiling(after.bytes_held + 512 * MIB) == 1 &&
                        memarena_ceiling() == after.bytes_held + 512 * MIB;
  const int refused = memarena_set_ceiling(1) == 0;
  memarena_set_ceiling(0);

  printf("c-api: counted %s, released %s, peaks reset %s, ceiling %s, too-low ceiling %s\n",
         counted ? "yes" : "no", released >= 16 * MIB ? "yes" : "no", peak_reset ? "yes" : "no",
         limit_set ? "set" : "NOT set", refused ? "refused" : "ACCEPTED");
  return counted && released >= 16 * MIB && peak_reset && limit_set && refused ? 0 : 1;
}
