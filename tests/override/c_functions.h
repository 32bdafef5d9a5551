// The allocation functions under test, as a table, so one test source checks the semantics
// three ways: through the inline implementation (every build, sanitizers included), through
// the symbols of the link-time override, and through the symbols of the preloaded library.
// Calls go through pointers so the compiler cannot fold malloc/free pairs away.
#pragma once

#include <malloc.h>

#include <cstddef>
#include <cstdio>

#include "memarena/c_api.h"

namespace memarena::testing {

struct CFunctions {
  const char* mode;  // "inline", "linked" or "preloaded"
  void* (*malloc)(std::size_t);
  void (*free)(void*);
  void* (*calloc)(std::size_t, std::size_t);
  void* (*realloc)(void*, std::size_t);
  void* (*reallocarray)(void*, std::size_t, std::size_t);
  void* (*aligned_alloc)(std::size_t, std::size_t);
  int (*posix_memalign)(void**, std::size_t, std::size_t);
  void* (*memalign)(std::size_t, std::size_t);
  void* (*valloc)(std::size_t);
  void* (*pvalloc)(std::size_t);
  std::size_t (*malloc_usable_size)(void*);
  void (*cfree)(void*);
  int (*malloc_trim)(std::size_t);
  struct mallinfo2 (*mallinfo2)();
  struct mallinfo (*mallinfo)();
  void (*malloc_stats)();
  int (*malloc_info)(int, std::FILE*);
  void* (*libc_malloc)(std::size_t);
  void* (*libc_calloc)(std::size_t, std::size_t);
  void* (*libc_realloc)(void*, std::size_t);
  void (*libc_free)(void*);
  void* (*libc_memalign)(std::size_t, std::size_t);
  void* (*libc_valloc)(std::size_t);
  void* (*libc_pvalloc)(std::size_t);
  struct mallinfo (*libc_mallinfo)();

  // operator new/delete; `alignment` 0 means the unaligned form.
  void* (*new_object)(std::size_t size, std::size_t alignment, bool array);
  void* (*new_nothrow)(std::size_t size, std::size_t alignment, bool array);
  // Every delete form: `form` 0 plain, 1 sized, 2 nothrow; with `alignment` != 0 the aligned
  // variant of that form.
  void (*delete_object)(void* ptr, std::size_t size, std::size_t alignment, bool array, int form);

  // The C API, or its C++ equivalent in inline mode.
  int (*get_stats)(memarena_stats*);
  int (*set_ceiling)(std::size_t);
  std::size_t (*release_unused_spans)();
};

// Defined by c_functions_inline.cc or c_functions_exported.cc, whichever the binary links.
const CFunctions& Functions();

}  // namespace memarena::testing
