// WatchedHeaps: which heaps the gtest guard reads. The host allocator always, and the heap
// behind malloc when that is a different one (a preloaded drop-in, a sanitizer's, glibc's),
// found once by watching which heap a probe malloc lands in.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace memarena::testing {

// One reading summed over the watched heaps, in bytes.
struct HeapReading {
  std::size_t in_use = 0;
  std::size_t held = 0;
  // The peak of held since the last ResetPeaks(); for a heap that keeps no peak (glibc, a
  // sanitizer) its held now, so the sum is a lower bound and peak_exact() says so.
  std::size_t peak_held = 0;
};

class WatchedHeaps {
 public:
  enum class Kind { kHost, kPreloadedDropIn, kSanitizer, kLibc };

  // Probes malloc (one 1 MiB block, freed at once) to find the heap behind it.
  static WatchedHeaps Discover();

  HeapReading Read() const;
  void ResetPeaks() const;
  // Gives free memory of every watched memarena heap back; returns the bytes released.
  std::size_t Release() const;

  // False when malloc's blocks land in no heap the guard can read: it then sees only
  // memarena::HostAllocator().
  bool malloc_measured() const noexcept { return malloc_measured_; }
  // False when a watched heap keeps no peak (peak_held is then a lower bound).
  bool peak_exact() const noexcept;
  // "memarena host allocator + glibc malloc", for the report heading and messages.
  std::string Describe() const;

 private:
  // A heap outside this binary's copy of memarena is read through C entry points found
  // with dlsym; unused ones stay null.
  struct Heap {
    Kind kind;
    void* stats_fn = nullptr;    // memarena_get_stats, __sanitizer_get_current_allocated_bytes
    void* size_fn = nullptr;     // __sanitizer_get_heap_size
    void* reset_fn = nullptr;    // memarena_reset_peak_stats
    void* release_fn = nullptr;  // memarena_release_unused_spans
  };
  static HeapReading ReadOne(const Heap& heap);
  std::vector<Heap> heaps_;
  bool malloc_measured_ = false;
};

}  // namespace memarena::testing
