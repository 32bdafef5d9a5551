// realloc's general path (dropin.h ReallocBlock): every case the heap's one-lookup move
// (host::ReallocateOr) hands on, and every realloc while tracing.
#include <cstring>

#include "override/dropin.h"
#include "platform/stack.h"

namespace memarena::dropin {
namespace {

// A realloc in the trace: the old block's free, then the new (or same) block's allocation.
void TraceRealloc(const void* old_block, const void* new_block, std::size_t bytes) noexcept {
  if (TracingOn()) [[unlikely]] {
    TraceFree(old_block);
    TraceAllocate(new_block, bytes);
  }
}

}  // namespace

MEMARENA_ALLOCATION_ENTRY void* ReallocBlock(void* ptr, std::size_t bytes) noexcept {
  if (bytes == 0) {
    Free(ptr);
    return nullptr;
  }
  const std::size_t usable = host::UsableSize(ptr);
  if (usable == 0) [[unlikely]] {  // freed, inside a block, or not the heap's
    host::ReportInvalidPointer(ptr, "realloc");
    errno = EINVAL;
    return nullptr;
  }
  if (host::ReallocKeeps(usable, bytes)) {
    TraceRealloc(ptr, ptr, bytes);
    return ptr;
  }
  void* fresh = nullptr;
  if (bytes > usable) {
    const std::size_t roomy = host::ReallocRoomy(usable);
    if (usable > host::kMaxSmallSize &&
        ((roomy > bytes && host::GrowInPlace(ptr, roomy)) || host::GrowInPlace(ptr, bytes))) {
      TraceRealloc(ptr, ptr, bytes);
      return ptr;
    }
    // Headroom is a wish: under a ceiling a refused attempt must not release memory or
    // count as an out-of-memory event.
    if (roomy > bytes) fresh = host::AllocateIfAvailable(roomy, kMallocAlignment);
  }
  if (fresh == nullptr) fresh = host::Allocate(bytes, kMallocAlignment);
  if (fresh == nullptr) [[unlikely]] return FailAllocation(bytes);
  const std::size_t copy = bytes < usable ? bytes : usable;
  if (copy >= kPrefaultCopyBytes) host::PrefaultForWrite(fresh, copy);
  std::memcpy(fresh, ptr, copy);
  TraceRealloc(ptr, fresh, bytes);
  host::FreeMoved(ptr, usable);
  return fresh;
}

}  // namespace memarena::dropin
