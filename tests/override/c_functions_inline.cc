// The function table over the drop-in's inline semantics (dropin.h), for builds where
// malloc itself cannot be replaced (sanitizers) and as the reference for the exported forms.
#include <cerrno>

#include "common/c_stats.h"
#include "memarena/host.h"
#include "override/c_functions.h"
#include "override/dropin.h"
#include "override/heap_introspection.h"

namespace memarena::testing {
namespace {

namespace dropin = memarena::dropin;

std::size_t NewAlignment(std::size_t alignment) {
  return alignment < dropin::kMallocAlignment ? dropin::kMallocAlignment : alignment;
}

int GetStats(memarena_stats* out) {
  if (out == nullptr) return EINVAL;
  *out = common::ToCStats(HostAllocator().GetStats());  // as memarena_get_stats does
  return 0;
}

}  // namespace

const CFunctions& Functions() {
  static const CFunctions table = {
      .mode = "inline",
      .malloc = &dropin::Malloc,
      .free = &dropin::Free,
      .calloc = &dropin::Calloc,
      .realloc = &dropin::Realloc,
      .reallocarray = &dropin::ReallocArray,
      .aligned_alloc = &dropin::AlignedAlloc,
      .posix_memalign = &dropin::PosixMemalign,
      .memalign = &dropin::Memalign,
      .valloc = &dropin::Valloc,
      .pvalloc = &dropin::Pvalloc,
      .malloc_usable_size = [](void* p) { return dropin::UsableSize(p); },
      .cfree = &dropin::Free,
      .malloc_trim = [](std::size_t) { return dropin::Trim(); },
      .mallinfo2 = &dropin::MallInfo2,
      .mallinfo = &dropin::MallInfo,
      .malloc_stats = &dropin::MallocStats,
      .malloc_info = &dropin::MallocInfo,
      .libc_malloc = &dropin::Malloc,
      .libc_calloc = &dropin::Calloc,
      .libc_realloc = &dropin::Realloc,
      .libc_free = &dropin::Free,
      .libc_memalign = &dropin::Memalign,
      .libc_valloc = &dropin::Valloc,
      .libc_pvalloc = &dropin::Pvalloc,
      .libc_mallinfo = &dropin::MallInfo,
      .new_object = [](std::size_t size, std::size_t alignment, bool) {
        return dropin::New(size, NewAlignment(alignment));
      },
      .new_nothrow = [](std::size_t size, std::size_t alignment, bool) {
        return dropin::NewNothrow(size, NewAlignment(alignment));
      },
      .delete_object = [](void* ptr, std::size_t, std::size_t, bool, int) { dropin::Free(ptr); },
      .get_stats = &GetStats,
      .set_ceiling = [](std::size_t bytes) { return SetCeiling(bytes) ? 1 : 0; },
      .release_unused_spans = [] { return ReleaseUnusedSpans(); },
  };
  return table;
}

}  // namespace memarena::testing
