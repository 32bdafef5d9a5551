// operator new's failure path: the new_handler loop of [new.delete.single], then
// memarena::OutOfMemory (a std::bad_alloc) carrying the host allocator's diagnostic.
#include <new>
#include <string>
#include <utility>

#include "memarena/errors.h"
#include "memarena/host.h"
#include "override/dropin.h"

namespace memarena::dropin {
namespace {

// Calls the installed new_handler and retries until the allocation succeeds (returns it) or
// no handler is installed (returns nullptr). Whatever the handler throws propagates.
void* RetryWithNewHandler(std::size_t bytes, std::size_t alignment) {
  for (;;) {
    const std::new_handler handler = std::get_new_handler();
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

void* NewSlow(std::size_t bytes, std::size_t alignment) {
  void* ptr = RetryWithNewHandler(bytes, alignment);
  if (ptr != nullptr) return ptr;
  // Building the message allocates; at the ceiling that can fail too, and then the plain
  // std::bad_alloc is still the right answer.
  std::string message;
  try {
    message = HostAllocator().DescribeFailure(bytes, alignment);
  } catch (...) {
    throw std::bad_alloc();
  }
  throw OutOfMemory(std::move(message));
}

void* NewTraced(std::size_t bytes, std::size_t alignment) {
  void* ptr = host::Allocate(bytes, alignment);
  if (ptr == nullptr) return NewSlow(bytes, alignment);
  TraceAllocate(ptr, bytes);
  return ptr;
}

void* NewNothrowTraced(std::size_t bytes, std::size_t alignment) noexcept {
  void* ptr = host::Allocate(bytes, alignment);
  if (ptr == nullptr) return NewNothrowSlow(bytes, alignment);
  TraceAllocate(ptr, bytes);
  return ptr;
}

void* NewNothrowSlow(std::size_t bytes, std::size_t alignment) noexcept {
  try {
    return RetryWithNewHandler(bytes, alignment);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace memarena::dropin
