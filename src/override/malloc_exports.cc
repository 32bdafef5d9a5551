// The C allocation symbols the drop-in exports: the malloc family, the __libc_* allocation
// entry points glibc exports, cfree, malloc_trim and glibc's introspection (mallinfo2,
// mallinfo, __libc_mallinfo, malloc_stats, malloc_info). Each forwards to the semantics in
// dropin.h or heap_introspection.h. Built with -fno-builtin so the compiler cannot turn
// calloc's body into a call to calloc. The ones that allocate are in the allocation-entry
// section (runtime.h), so heap profiles skip them.
#include <malloc.h>
#include <stdlib.h>

#include "override/dropin.h"
#include "override/heap_introspection.h"
#include "override/runtime.h"

namespace dropin = memarena::dropin;

// glibc no longer declares these; the declarations give them C linkage.
extern "C" {
MEMARENA_DROPIN_EXPORT void cfree(void* ptr) noexcept;
MEMARENA_DROPIN_EXPORT void* __libc_malloc(size_t size) noexcept;
MEMARENA_DROPIN_EXPORT void* __libc_calloc(size_t count, size_t size) noexcept;
MEMARENA_DROPIN_EXPORT void* __libc_realloc(void* ptr, size_t size) noexcept;
MEMARENA_DROPIN_EXPORT void __libc_free(void* ptr) noexcept;
MEMARENA_DROPIN_EXPORT void* __libc_memalign(size_t alignment, size_t size) noexcept;
MEMARENA_DROPIN_EXPORT void* __libc_valloc(size_t size) noexcept;
MEMARENA_DROPIN_EXPORT void* __libc_pvalloc(size_t size) noexcept;
MEMARENA_DROPIN_EXPORT struct mallinfo __libc_mallinfo() noexcept;
}

extern "C" {

MEMARENA_DROPIN_ALLOCATING_EXPORT void* malloc(size_t size) noexcept {
  return dropin::Malloc(size);
}

MEMARENA_DROPIN_EXPORT void free(void* ptr) noexcept { dropin::Free(ptr); }

MEMARENA_DROPIN_ALLOCATING_EXPORT void* calloc(size_t count, size_t size) noexcept {
  return dropin::Calloc(count, size);
}

MEMARENA_DROPIN_ALLOCATING_EXPORT void* realloc(void* ptr, size_t size) noexcept {
  return dropin::Realloc(ptr, size);
}

MEMARENA_DROPIN_ALLOCATING_EXPORT void* reallocarray(void* ptr, size_t count,
                                                     size_t size) noexcept {
  return dropin::ReallocArray(ptr, count, size);
}

MEMARENA_DROPIN_ALLOCATING_EXPORT void* aligned_alloc(size_t alignment, size_t size) noexcept {
  return dropin::AlignedAlloc(alignment, size);
}

MEMARENA_DROPIN_ALLOCATING_EXPORT int posix_memalign(void** out, size_t alignment,
                                                     size_t size) noexcept {
  return dropin::PosixMemalign(out, alignment, size);
}

MEMARENA_DROPIN_ALLOCATING_EXPORT void* memalign(size_t alignment, size_t size) noexcept {
  return dropin::Memalign(alignment, size);
}

MEMARENA_DROPIN_ALLOCATING_EXPORT void* valloc(size_t size) noexcept {
  return dropin::Valloc(size);
}

MEMARENA_DROPIN_ALLOCATING_EXPORT void* pvalloc(size_t size) noexcept {
  return dropin::Pvalloc(size);
}

MEMARENA_DROPIN_EXPORT size_t malloc_usable_size(void* ptr) noexcept {
  return dropin::UsableSize(ptr);
}

MEMARENA_DROPIN_EXPORT int malloc_trim(size_t /*pad*/) noexcept { return dropin::Trim(); }

MEMARENA_DROPIN_EXPORT struct mallinfo2 mallinfo2() noexcept { return dropin::MallInfo2(); }

MEMARENA_DROPIN_EXPORT struct mallinfo mallinfo() noexcept { return dropin::MallInfo(); }

MEMARENA_DROPIN_EXPORT void malloc_stats() noexcept { dropin::MallocStats(); }

MEMARENA_DROPIN_EXPORT int malloc_info(int options, FILE* stream) noexcept {
  return dropin::MallocInfo(options, stream);
}

void cfree(void* ptr) noexcept { dropin::Free(ptr); }

MEMARENA_ALLOCATION_ENTRY void* __libc_malloc(size_t size) noexcept { return dropin::Malloc(size); }

MEMARENA_ALLOCATION_ENTRY void* __libc_calloc(size_t count, size_t size) noexcept {
  return dropin::Calloc(count, size);
}

MEMARENA_ALLOCATION_ENTRY void* __libc_realloc(void* ptr, size_t size) noexcept {
  return dropin::Realloc(ptr, size);
}

void __libc_free(void* ptr) noexcept { dropin::Free(ptr); }

MEMARENA_ALLOCATION_ENTRY void* __libc_memalign(size_t alignment, size_t size) noexcept {
  return dropin::Memalign(alignment, size);
}

// glibc exports these two as well: a block they returned from glibc's heap would be a
// foreign block to memarena's free.
MEMARENA_ALLOCATION_ENTRY void* __libc_valloc(size_t size) noexcept { return dropin::Valloc(size); }

MEMARENA_ALLOCATION_ENTRY void* __libc_pvalloc(size_t size) noexcept {
  return dropin::Pvalloc(size);
}

struct mallinfo __libc_mallinfo() noexcept { return dropin::MallInfo(); }

}  // extern "C"
