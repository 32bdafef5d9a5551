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

// Other names for the functions above: glibc exports every __libc_* one (and cfree), and a
// block from glibc's heap would be a foreign block to memarena's free. Aliases, so they
// take no text of their own (the allocation entries sit in the start-up text's window,
// libmemarena_malloc_startup.ld) and share their target's section.
// g++ wants the target's attributes (glibc's malloc, alloc_size) on the alias too: copy.
#if defined(__clang__)
#define MEMARENA_DROPIN_ALIAS(target) MEMARENA_DROPIN_EXPORT __attribute__((alias(#target)))
#else
#define MEMARENA_DROPIN_ALIAS(target) \
  MEMARENA_DROPIN_EXPORT __attribute__((alias(#target), copy(target)))
#endif
void cfree(void* ptr) noexcept MEMARENA_DROPIN_ALIAS(free);
void* __libc_malloc(size_t size) noexcept MEMARENA_DROPIN_ALIAS(malloc);
void* __libc_calloc(size_t count, size_t size) noexcept MEMARENA_DROPIN_ALIAS(calloc);
void* __libc_realloc(void* ptr, size_t size) noexcept MEMARENA_DROPIN_ALIAS(realloc);
void __libc_free(void* ptr) noexcept MEMARENA_DROPIN_ALIAS(free);
void* __libc_memalign(size_t alignment, size_t size) noexcept MEMARENA_DROPIN_ALIAS(memalign);
void* __libc_valloc(size_t size) noexcept MEMARENA_DROPIN_ALIAS(valloc);
void* __libc_pvalloc(size_t size) noexcept MEMARENA_DROPIN_ALIAS(pvalloc);
struct mallinfo __libc_mallinfo() noexcept MEMARENA_DROPIN_ALIAS(mallinfo);

}  // extern "C"
