/* The C API of memarena's process-wide host allocator, for a test main or a runtime that is
 * not C++. Valid C (C99) and C++; every function is extern "C" and never throws. */
#ifndef MEMARENA_C_API_H_
#define MEMARENA_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the functions live. They are exported by the drop-in library libmemarena_malloc.so
 * and by the link-time override (CMake targets memarena::memarena_malloc and
 * memarena::memarena_malloc_static), and they act on the heap that serves malloc and new in
 * that process. So they work the same whether the program was linked against the drop-in or
 * only started under LD_PRELOAD=libmemarena_malloc.so; in the second case the program is not
 * linked against them and finds them with dlsym(RTLD_DEFAULT, "memarena_get_stats") or
 * through weak declarations. */

/* A snapshot of the host allocator's counters. The field names and meanings are those of
 * memarena::AllocatorStats (see memarena/stats.h and the glossary in docs/glossary.md). */
typedef struct memarena_stats {
  size_t bytes_in_use;       /* handed to callers, at the size reserved for them */
  size_t bytes_requested;    /* sum of the sizes callers asked for */
  size_t bytes_held;         /* obtained from the OS and not yet returned */
  size_t bytes_releasable;   /* held bytes memarena_release_unused_spans() could return now */
  size_t largest_free_block;
  double fragmentation;      /* 1 - largest_free_block / free bytes inside held */
  size_t peak_bytes_in_use;
  size_t peak_bytes_requested;
  size_t peak_bytes_held;
  size_t limit_bytes;        /* the ceiling; 0 = unlimited */
  uint64_t num_allocs;
  uint64_t num_frees;
  uint64_t num_reserves;     /* spans obtained from the OS */
  uint64_t num_releases;     /* spans given back */
  uint64_t bytes_released;   /* total bytes given back */
  uint64_t num_ooms;         /* failed allocations */
  size_t max_alloc_size;     /* largest single allocation served */
} memarena_stats;

/* Returns free spans of the host allocator (and of every live memarena arena) to the OS.
 * Returns the bytes given back. Takes the allocator's locks; costs roughly one madvise per
 * free span. */
size_t memarena_release_unused_spans(void);

/* Sets the ceiling on bytes the host allocator holds (0 = unlimited). Returns 1 on success;
 * returns 0 and changes nothing when `bytes` is below what is still held after releasing
 * every free span. */
int memarena_set_ceiling(size_t bytes);

/* The current ceiling in bytes (0 = unlimited). */
size_t memarena_ceiling(void);

/* Restarts the host allocator's peaks (peak_bytes_in_use, peak_bytes_requested,
 * peak_bytes_held) from the current values, so a test runner can read one test's peak.
 * Locks and folds per-thread counters; not for hot paths. */
void memarena_reset_peak_stats(void);

/* Fills *out with a snapshot of the host allocator's stats. Returns 0, or EINVAL when `out`
 * is NULL. Locks and folds per-thread counters; not for hot paths. */
int memarena_get_stats(memarena_stats* out);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* MEMARENA_C_API_H_ */
