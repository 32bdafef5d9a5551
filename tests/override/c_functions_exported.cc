// The function table over the exported symbols: the link-time override's (linked mode) or,
// with MEMARENA_TEST_PRELOADED, whatever the dynamic linker binds at run time, which must be
// libmemarena_malloc.so from LD_PRELOAD (preloaded mode, where cfree and the __libc_* names
// are looked up with dlsym because glibc offers no link-time definition of some of them).
#include <dlfcn.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <new>

#include "override/c_functions.h"

extern "C" {
void cfree(void* ptr) noexcept;
void* __libc_malloc(std::size_t size) noexcept;
void* __libc_calloc(std::size_t count, std::size_t size) noexcept;
void* __libc_realloc(void* ptr, std::size_t size) noexcept;
void __libc_free(void* ptr) noexcept;
void* __libc_memalign(std::size_t alignment, std::size_t size) noexcept;
void* __libc_valloc(std::size_t size) noexcept;
void* __libc_pvalloc(std::size_t size) noexcept;
struct mallinfo __libc_mallinfo() noexcept;
}

namespace memarena::testing {
namespace {

// if/else rather than ?: throughout: clang 14 evaluates both arms of a ?: whose arms are
// void calls of replaceable deallocation functions, which frees the block twice.
void* NewObject(std::size_t size, std::size_t alignment, bool array) {
  const auto a = static_cast<std::align_val_t>(alignment);
  if (alignment == 0) {
    if (array) return ::operator new[](size);
    return ::operator new(size);
  }
  if (array) return ::operator new[](size, a);
  return ::operator new(size, a);
}

void* NewNothrow(std::size_t size, std::size_t alignment, bool array) {
  const auto a = static_cast<std::align_val_t>(alignment);
  if (alignment == 0) {
    if (array) return ::operator new[](size, std::nothrow);
    return ::operator new(size, std::nothrow);
  }
  if (array) return ::operator new[](size, a, std::nothrow);
  return ::operator new(size, a, std::nothrow);
}

void DeleteUnaligned(void* p, std::size_t size, bool array, int form) {
  if (form == 0) {
    if (array) {
      ::operator delete[](p);
    } else {
      ::operator delete(p);
    }
  } else if (form == 1) {
    if (array) {
      ::operator delete[](p, size);
    } else {
      ::operator delete(p, size);
    }
  } else if (array) {
    ::operator delete[](p, std::nothrow);
  } else {
    ::operator delete(p, std::nothrow);
  }
}

void DeleteAligned(void* p, std::size_t size, std::align_val_t a, bool array, int form) {
  if (form == 0) {
    if (array) {
      ::operator delete[](p, a);
    } else {
      ::operator delete(p, a);
    }
  } else if (form == 1) {
    if (array) {
      ::operator delete[](p, size, a);
    } else {
      ::operator delete(p, size, a);
    }
  } else if (array) {
    ::operator delete[](p, a, std::nothrow);
  } else {
    ::operator delete(p, a, std::nothrow);
  }
}

void DeleteObject(void* p, std::size_t size, std::size_t alignment, bool array, int form) {
  if (alignment == 0) {
    DeleteUnaligned(p, size, array, form);
  } else {
    DeleteAligned(p, size, static_cast<std::align_val_t>(alignment), array, form);
  }
}

#if MEMARENA_TEST_PRELOADED
template <typename Fn>
Fn Lookup(const char* name) {
  void* symbol = dlsym(RTLD_DEFAULT, name);
  if (symbol == nullptr) {
    std::fprintf(stderr, "%s not found: run this test with LD_PRELOAD=libmemarena_malloc.so\n",
                 name);
    std::abort();
  }
  return reinterpret_cast<Fn>(symbol);
}
#define MEMARENA_FN(name) Lookup<decltype(&::name)>(#name)
#define MEMARENA_MODE "preloaded"
#else
#define MEMARENA_FN(name) &::name
#define MEMARENA_MODE "linked"
#endif

}  // namespace

// glibc deprecates mallinfo for its int fields; the drop-in still exports it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
const CFunctions& Functions() {
  static const CFunctions table = {
      .mode = MEMARENA_MODE,
      .malloc = MEMARENA_FN(malloc),
      .free = MEMARENA_FN(free),
      .calloc = MEMARENA_FN(calloc),
      .realloc = MEMARENA_FN(realloc),
      .reallocarray = MEMARENA_FN(reallocarray),
      .aligned_alloc = MEMARENA_FN(aligned_alloc),
      .posix_memalign = MEMARENA_FN(posix_memalign),
      .memalign = MEMARENA_FN(memalign),
      .valloc = MEMARENA_FN(valloc),
      .pvalloc = MEMARENA_FN(pvalloc),
      .malloc_usable_size = MEMARENA_FN(malloc_usable_size),
      .cfree = MEMARENA_FN(cfree),
      .malloc_trim = MEMARENA_FN(malloc_trim),
      .mallinfo2 = MEMARENA_FN(mallinfo2),
      .mallinfo = MEMARENA_FN(mallinfo),
      .malloc_stats = MEMARENA_FN(malloc_stats),
      .malloc_info = MEMARENA_FN(malloc_info),
      .libc_malloc = MEMARENA_FN(__libc_malloc),
      .libc_calloc = MEMARENA_FN(__libc_calloc),
      .libc_realloc = MEMARENA_FN(__libc_realloc),
      .libc_free = MEMARENA_FN(__libc_free),
      .libc_memalign = MEMARENA_FN(__libc_memalign),
      .libc_valloc = MEMARENA_FN(__libc_valloc),
      .libc_pvalloc = MEMARENA_FN(__libc_pvalloc),
      .libc_mallinfo = MEMARENA_FN(__libc_mallinfo),
      .new_object = &NewObject,
      .new_nothrow = &NewNothrow,
      .delete_object = &DeleteObject,
      .get_stats = MEMARENA_FN(memarena_get_stats),
      .set_ceiling = MEMARENA_FN(memarena_set_ceiling),
      .release_unused_spans = MEMARENA_FN(memarena_release_unused_spans),
  };
  return table;
}
#pragma GCC diagnostic pop

}  // namespace memarena::testing
