// Every replaceable C++ operator new and delete: plain, array, nothrow, aligned and sized.
// new throws memarena::OutOfMemory (a std::bad_alloc) after the new_handler loop; the sized
// deletes find the thread cache's list from the size (host::FreeSized: the block's pagemap
// entry must agree, else the size is ignored); the aligned ones ignore it.
#include <cstddef>
#include <new>

#include "override/dropin.h"
#include "override/runtime.h"

namespace dropin = memarena::dropin;

namespace {
constexpr std::size_t kNewAlignment = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

std::size_t ToSize(std::align_val_t alignment) noexcept {
  const auto a = static_cast<std::size_t>(alignment);
  return a < kNewAlignment ? kNewAlignment : a;
}
}  // namespace

MEMARENA_DROPIN_ALLOCATING_EXPORT void* operator new(std::size_t size) {
  return dropin::New(size, kNewAlignment);
}
MEMARENA_DROPIN_ALLOCATING_EXPORT void* operator new[](std::size_t size) {
  return dropin::New(size, kNewAlignment);
}
MEMARENA_DROPIN_ALLOCATING_EXPORT void* operator new(std::size_t size,
                                                     const std::nothrow_t&) noexcept {
  return dropin::NewNothrow(size, kNewAlignment);
}
MEMARENA_DROPIN_ALLOCATING_EXPORT void* operator new[](std::size_t size,
                                                       const std::nothrow_t&) noexcept {
  return dropin::NewNothrow(size, kNewAlignment);
}
MEMARENA_DROPIN_ALLOCATING_EXPORT void* operator new(std::size_t size, std::align_val_t alignment) {
  return dropin::New(size, ToSize(alignment));
}
MEMARENA_DROPIN_ALLOCATING_EXPORT void* operator new[](std::size_t size,
                                                       std::align_val_t alignment) {
  return dropin::New(size, ToSize(alignment));
}
MEMARENA_DROPIN_ALLOCATING_EXPORT void* operator new(std::size_t size, std::align_val_t alignment,
                                          const std::nothrow_t&) noexcept {
  return dropin::NewNothrow(size, ToSize(alignment));
}
MEMARENA_DROPIN_ALLOCATING_EXPORT void* operator new[](std::size_t size, std::align_val_t alignment,
                                            const std::nothrow_t&) noexcept {
  return dropin::NewNothrow(size, ToSize(alignment));
}

MEMARENA_DROPIN_EXPORT void operator delete(void* ptr) noexcept { dropin::Free(ptr); }
MEMARENA_DROPIN_EXPORT void operator delete[](void* ptr) noexcept { dropin::Free(ptr); }
MEMARENA_DROPIN_EXPORT void operator delete(void* ptr, const std::nothrow_t&) noexcept {
  dropin::Free(ptr);
}
MEMARENA_DROPIN_EXPORT void operator delete[](void* ptr, const std::nothrow_t&) noexcept {
  dropin::Free(ptr);
}
MEMARENA_DROPIN_EXPORT void operator delete(void* ptr, std::size_t size) noexcept {
  dropin::FreeSized(ptr, size);
}
MEMARENA_DROPIN_EXPORT void operator delete[](void* ptr, std::size_t size) noexcept {
  dropin::FreeSized(ptr, size);
}
MEMARENA_DROPIN_EXPORT void operator delete(void* ptr, std::align_val_t) noexcept {
  dropin::Free(ptr);
}
MEMARENA_DROPIN_EXPORT void operator delete[](void* ptr, std::align_val_t) noexcept {
  dropin::Free(ptr);
}
MEMARENA_DROPIN_EXPORT void operator delete(void* ptr, std::align_val_t,
                                            const std::nothrow_t&) noexcept {
  dropin::Free(ptr);
}
MEMARENA_DROPIN_EXPORT void operator delete[](void* ptr, std::align_val_t,
                                              const std::nothrow_t&) noexcept {
  dropin::Free(ptr);
}
MEMARENA_DROPIN_EXPORT void operator delete(void* ptr, std::size_t, std::align_val_t) noexcept {
  dropin::Free(ptr);
}
MEMARENA_DROPIN_EXPORT void operator delete[](void* ptr, std::size_t, std::align_val_t) noexcept {
  dropin::Free(ptr);
}
