// The C API of include/memarena/c_api.h over the public C++ API of the host allocator.
#include "memarena/c_api.h"

#include <cerrno>

#include "common/c_stats.h"
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
  *out = memarena::common::ToCStats(s);
  return 0;
}

}  // extern "C"
