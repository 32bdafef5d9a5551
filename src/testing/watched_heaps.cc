// WatchedHeaps: finds the heap behind malloc and reads it together with the host allocator.
#include "testing/watched_heaps.h"

#include <fmt/format.h>

#include <cstdlib>

#include "memarena/c_api.h"
#include "memarena/host.h"
#include "memarena/stats.h"
#include "platform/os.h"

namespace memarena::testing {
namespace {

constexpr std::size_t kProbeBytes = std::size_t{1} << 20;

using GetStatsFn = int (*)(memarena_stats*);
using VoidFn = void (*)();
using SizeFn = std::size_t (*)();

template <typename Fn>
Fn As(void* symbol) {
  return reinterpret_cast<Fn>(symbol);
}

}  // namespace

HeapReading WatchedHeaps::ReadOne(const Heap& heap) {
  switch (heap.kind) {
    case Kind::kHost: {
      const AllocatorStats s = HostAllocator().GetStats();
      return {s.bytes_in_use, s.bytes_held, s.peak_bytes_held};
    }
    case Kind::kPreloadedDropIn: {
      memarena_stats s{};
      if (As<GetStatsFn>(heap.stats_fn)(&s) != 0) return {};
      return {s.bytes_in_use, s.bytes_held, s.peak_bytes_held};
    }
    case Kind::kSanitizer: {
      const std::size_t in_use = As<SizeFn>(heap.stats_fn)();
      const std::size_t held = As<SizeFn>(heap.size_fn)();
      return {in_use, held, held};
    }
    case Kind::kLibc: {
      const platform::LibcHeapBytes b = platform::ReadLibcHeap();
      return {b.in_use, b.held, b.held};
    }
  }
  return {};
}

WatchedHeaps WatchedHeaps::Discover() {
  WatchedHeaps watched;
  watched.heaps_.push_back({Kind::kHost});
  // The candidates for malloc's heap, most specific first. The host allocator itself backs
  // malloc when the drop-in is linked into this binary (memarena_malloc_static).
  std::vector<Heap> candidates = {{Kind::kHost}};
  if (void* stats = platform::FindSymbol("memarena_get_stats")) {
    candidates.push_back({Kind::kPreloadedDropIn, stats, nullptr,
                          platform::FindSymbol("memarena_reset_peak_stats"),
                          platform::FindSymbol("memarena_release_unused_spans")});
  }
  void* san_in_use = platform::FindSymbol("__sanitizer_get_current_allocated_bytes");
  void* san_size = platform::FindSymbol("__sanitizer_get_heap_size");
  if (san_in_use != nullptr && san_size != nullptr) {
    candidates.push_back({Kind::kSanitizer, san_in_use, san_size});
  }
  candidates.push_back({Kind::kLibc});

  std::vector<std::size_t> before;
  for (const Heap& c : candidates) before.push_back(ReadOne(c).in_use);
  // Through a volatile pointer, so the compiler cannot drop the malloc/free pair.
  void* (*volatile allocate)(std::size_t) = &std::malloc;
  void* probe = allocate(kProbeBytes);
  for (std::size_t i = 0; i < candidates.size() && probe != nullptr; ++i) {
    if (ReadOne(candidates[i]).in_use >= before[i] + kProbeBytes) {
      watched.malloc_measured_ = true;
      if (candidates[i].kind != Kind::kHost) watched.heaps_.push_back(candidates[i]);
      break;
    }
  }
  std::free(probe);
  return watched;
}

HeapReading WatchedHeaps::Read() const {
  HeapReading sum;
  for (const Heap& heap : heaps_) {
    const HeapReading r = ReadOne(heap);
    sum.in_use += r.in_use;
    sum.held += r.held;
    sum.peak_held += r.peak_held;
  }
  return sum;
}

void WatchedHeaps::ResetPeaks() const {
  for (const Heap& heap : heaps_) {
    if (heap.kind == Kind::kHost) HostAllocator().ResetPeakStats();
    if (heap.kind == Kind::kPreloadedDropIn && heap.reset_fn != nullptr) {
      As<VoidFn>(heap.reset_fn)();
    }
  }
}

std::size_t WatchedHeaps::Release() const {
  std::size_t released = 0;
  for (const Heap& heap : heaps_) {
    if (heap.kind == Kind::kHost) released += ReleaseUnusedSpans();
    if (heap.kind == Kind::kPreloadedDropIn && heap.release_fn != nullptr) {
      released += As<SizeFn>(heap.release_fn)();
    }
  }
  return released;
}

bool WatchedHeaps::peak_exact() const noexcept {
  for (const Heap& heap : heaps_) {
    if (heap.kind == Kind::kSanitizer || heap.kind == Kind::kLibc) return false;
    if (heap.kind == Kind::kPreloadedDropIn && heap.reset_fn == nullptr) return false;
  }
  return true;
}

std::string WatchedHeaps::Describe() const {
  std::string text = "memarena host allocator";
  if (heaps_.size() == 1) {
    text += malloc_measured_ ? " (also behind malloc)" : "; malloc's heap not measured";
  }
  for (std::size_t i = 1; i < heaps_.size(); ++i) {
    switch (heaps_[i].kind) {
      case Kind::kPreloadedDropIn: text += " + preloaded memarena drop-in (malloc)"; break;
      case Kind::kSanitizer: text += " + sanitizer heap (malloc)"; break;
      case Kind::kLibc: text += " + glibc malloc"; break;
      case Kind::kHost: break;
    }
  }
  return text;
}

}  // namespace memarena::testing
