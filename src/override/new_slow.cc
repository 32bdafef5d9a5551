// operator new's failure path: the new_handler loop of [new.delete.single], then
// memarena::OutOfMemory (a std::bad_alloc) carrying the host allocator's diagnostic. The
// handler and the exception are the program's runtime's (cxx_boundary.h): the frames here
// hold nothing to clean up, so its exceptions pass through them by the unwind tables alone.
#include <new>

#include "override/cxx_boundary.h"
#include "override/dropin.h"

namespace memarena::dropin {
namespace {

// Calls the installed new_handler and retries until the allocation succeeds (returns it) or
// no handler is installed (returns nullptr). Whatever the handler throws propagates.
MEMARENA_ALLOCATION_ENTRY void* RetryWithNewHandler(std::size_t bytes, std::size_t alignment) {
  for (;;) {
    const std::new_handler handler = CurrentNewHandler();
    if (handler == nullptr) {
      if (TracingOn()) TraceFailure(bytes);
      return nullptr;
    }
    handler();
    void* ptr = host::Allocate(bytes, alignment);
    if (ptr != nullptr) {
      if (TracingOn()) TraceAllocate(ptr, bytes);
      return ptr;
    }
  }
}

}  // namespace

MEMARENA_ALLOCATION_ENTRY void* NewSlow(std::size_t bytes, std::size_t alignment) {
  void* ptr = RetryWithNewHandler(bytes, alignment);
  if (ptr != nullptr) return ptr;
  ThrowOutOfMemory(bytes, alignment);
}

MEMARENA_ALLOCATION_ENTRY void* NewTraced(std::size_t bytes, std::size_t alignment) {
  void* ptr = host::Allocate(bytes, alignment);
  if (ptr == nullptr) return NewSlow(bytes, alignment);
  TraceAllocate(ptr, bytes);
  return ptr;
}

MEMARENA_ALLOCATION_ENTRY void* NewNothrowTraced(std::size_t bytes,
                                                 std::size_t alignment) noexcept {
  void* ptr = host::Allocate(bytes, alignment);
  if (ptr == nullptr) return NewNothrowSlow(bytes, alignment);
  TraceAllocate(ptr, bytes);
  return ptr;
}

MEMARENA_ALLOCATION_ENTRY void* NewNothrowSlow(std::size_t bytes, std::size_t alignment) noexcept {
  if (CurrentNewHandler() == nullptr) {
    if (TracingOn()) TraceFailure(bytes);
    return nullptr;
  }
  void* result = nullptr;
  if (NothrowNewInProgramRuntime(bytes, alignment, result)) return result;
  try {
    return RetryWithNewHandler(bytes, alignment);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace memarena::dropin
