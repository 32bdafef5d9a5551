// The C API of include/memarena/c_api.h over the public C++ API of the host allocator.
#include "memarena/c_api.h"

#include <cerrno>

#include "memarena/host.h"
#include "memarena/stats.h"
#include "override/runtime.h"

extern "C" {

MEMARENA_DROPIN_EXPORT size_t memarena_release_unused_spans(void) {
  try {
    return memarena::ReleaseUnusedSpans();
  } catch (...) {
    return 0;
  }
}

MEMARENA_DROPIN_EXPORT int memarena_set_ceiling(size_t bytes) {
  try {
    return memarena::SetCeiling(bytes) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

MEMARENA_DROPIN_EXPORT size_t memarena_ceiling(void) { return memarena::Ceiling(); }

MEMARENA_DROPIN_EXPORT void memarena_reset_peak_stats(void) {
  try {
    memarena::HostAllocator().ResetPeakStats();
  } catch (...) {
    // Resetting counters cannot fail in practice; a C caller has no way to take an exception.
  }
}

MEMARENA_DROPIN_EXPORT int memarena_get_stats(memarena_stats* out) {
  if (out == nullptr) return EINVAL;
  memarena::AllocatorStats s;
  try {
    s = memarena::HostAllocator().GetStats();
  } catch (...) {
    return ENOMEM;
  }
  *out = memarena_stats{
      .bytes_in_use = s.bytes_in_use,
      .bytes_requested = s.bytes_requested,
      .bytes_held = s.bytes_held,
      .bytes_releasable = s.bytes_releasable,
      .largest_free_block = s.largest_free_block,
      .fragmentation = s.fragmentation,
      .peak_bytes_in_use = s.peak_bytes_in_use,
      .peak_bytes_requested = s.peak_bytes_requested,
      .peak_bytes_held = s.peak_bytes_held,
      .limit_bytes = s.limit_bytes,
      .num_allocs = s.num_allocs,
      .num_frees = s.num_frees,
      .num_reserves = s.num_reserves,
      .num_releases = s.num_releases,
      .bytes_released = s.bytes_released,
      .num_ooms = s.num_ooms,
      .max_alloc_size = s.max_alloc_size,
  };
  return 0;
}

}  // extern "C"
