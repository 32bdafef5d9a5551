// The C and C++ allocation semantics of the drop-in layer over memarena::host: malloc,
// calloc, realloc, the aligned forms and operator new, as inline functions. The exported
// symbols (malloc_exports.cc, new_exports.cc) forward here, and the semantics tests call
// these directly, which also works in sanitizer builds where replacing malloc cannot.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "host/host_api.h"
#include "host/size_classes.h"
#include "override/runtime.h"
#include "platform/os.h"

namespace memarena::dropin {

// What malloc and a plain operator new guarantee (glibc gives 16 on x86-64).
inline constexpr std::size_t kMallocAlignment = alignof(std::max_align_t);

// realloc's copies of at least this many bytes have the new block's pages faulted in by
// one call before the copy writes them, when the block is a page run fresh from the OS
// (host::PrefaultForWrite). On this project's VMs a 4 KiB page's first write costs 13 us
// through a fault and 0.7 + 5.6 us through the call (the VM maps the page at the write);
// bare metal faults in 0.1-0.3 us, so the call pays from a few pages: four here.
inline constexpr std::size_t kPrefaultCopyBytes = std::size_t{16} << 10;
static_assert(kMallocAlignment <= host::kMinAlign, "malloc takes the heap's alignment-free entry");

constexpr bool IsPowerOfTwo(std::size_t x) noexcept { return x != 0 && (x & (x - 1)) == 0; }

// The failure path of every C allocation: errno = ENOMEM, a trace row, the rate-limited
// message, nullptr. `count` > 1: an array of `count` elements of `bytes` (calloc,
// reallocarray) whose size overflows; its trace row says SIZE_MAX.
[[gnu::cold]] inline void* FailAllocation(std::size_t bytes,
                                          std::size_t alignment = kMallocAlignment,
                                          std::size_t count = 1) noexcept {
  errno = ENOMEM;
  if (TracingOn()) TraceFailure(count > 1 ? SIZE_MAX : bytes);
  ReportFailure(bytes, alignment, count);
  errno = ENOMEM;  // the message's write(2) may have changed it
  return nullptr;
}

// The untraced failure path, which host::AllocateOr calls in place of returning nullptr.
[[gnu::cold, gnu::noinline]] inline void* FailUntraced(std::size_t bytes,
                                                       std::size_t alignment) noexcept {
  ReportFailure(bytes, alignment);
  errno = ENOMEM;
  return nullptr;
}

// The fast path checks the trace flag first, so the common case is one flag test and a
// jump: the failure test lives in host::AllocateOr's slow path, so malloc keeps no frame.
// Up to the classes' own alignment (malloc's constant one: the test folds away) the entry
// without an alignment argument is taken.
inline void* AllocateAligned(std::size_t bytes, std::size_t alignment) noexcept {
  if (TracingOn()) [[unlikely]] return AllocateTraced(bytes, alignment);
  if (alignment <= host::kMinAlign) return host::AllocateMinAlignedOr(bytes, &FailUntraced);
  return host::AllocateOr(bytes, alignment, &FailUntraced);
}

inline void* Malloc(std::size_t bytes) noexcept {
  return AllocateAligned(bytes, kMallocAlignment);
}

inline void Free(void* ptr) noexcept {
  // The row goes out before the block is free, so no other thread can be handed the same
  // address and log its allocation first.
  if (TracingOn()) [[unlikely]] TraceFree(ptr);
  host::Free(ptr);
}

// The sized operator delete: host::FreeSized finds the list from the size (and still checks
// the block against its pagemap entry).
inline void FreeSized(void* ptr, std::size_t bytes) noexcept {
  if (TracingOn()) [[unlikely]] TraceFree(ptr);
  host::FreeSized(ptr, bytes);
}

inline void* Calloc(std::size_t count, std::size_t size) noexcept {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) [[unlikely]] {
    return FailAllocation(size, kMallocAlignment, count);
  }
  void* ptr = Malloc(bytes);
  if (ptr != nullptr) host::ZeroNew(ptr, bytes);
  return ptr;
}

// realloc: NULL acts as malloc; size 0 frees and returns NULL (glibc's behaviour); a block
// that still fits and stays at least half used is kept; on failure the old block is left
// untouched and NULL + ENOMEM is returned. A large block (above the size classes) first
// tries to grow in place into the free pages after it (host::GrowInPlace: no copy, and
// the pages already faulted stay), with headroom and then without. A block that must move
// to grow gets 50% headroom (when the request is smaller than that), so a buffer grown by
// small steps is copied O(log n) times instead of at every size class or page:
// bench/workloads/realloc_grow runs 7x faster than with exact sizes. Headroom that is never
// touched costs address space only. The block moved away from is not kept in the thread
// cache when it is big (FreeMoved). A copy into a page run fresh from the OS first faults
// its pages in with one call (kPrefaultCopyBytes): realloc_grow's faults 15.3 k -> 6.6 k.
// In the allocation-entry section (realloc_block.cc), as the heap's own frames are: it is the
// outermost drop-in frame of a sampled move.
void* ReallocBlock(void* ptr, std::size_t bytes) noexcept;

// Split so that realloc(NULL, n), a third of a growing array's calls, is malloc's test and
// jump (as one function g++ saved six registers before the null test: issue 12, `minimizer`,
// 13 instructions a call), and a small block's move is the host's one-lookup path
// (host::ReallocateOr), which hands every other case to ReallocBlock. Both are jumps.
inline void* Realloc(void* ptr, std::size_t bytes) noexcept {
  if (ptr == nullptr) return Malloc(bytes);
  if (TracingOn()) [[unlikely]] return ReallocBlock(ptr, bytes);
  return host::ReallocateOr(ptr, bytes, &ReallocBlock);
}

inline void* ReallocArray(void* ptr, std::size_t count, std::size_t size) noexcept {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) [[unlikely]] {
    return FailAllocation(size, kMallocAlignment, count);
  }
  return Realloc(ptr, bytes);
}

// C11 aligned_alloc: an alignment that is not a power of two is EINVAL (as glibc 2.38+).
inline void* AlignedAlloc(std::size_t alignment, std::size_t bytes) noexcept {
  if (!IsPowerOfTwo(alignment)) [[unlikely]] {
    errno = EINVAL;
    return nullptr;
  }
  return AllocateAligned(bytes, alignment < kMallocAlignment ? kMallocAlignment : alignment);
}

// glibc memalign: small alignments are malloc's, others round up to a power of two, and one
// with no power of two above it is EINVAL.
inline void* Memalign(std::size_t alignment, std::size_t bytes) noexcept {
  if (alignment <= kMallocAlignment) return Malloc(bytes);
  if (alignment > SIZE_MAX / 2 + 1) [[unlikely]] {
    errno = EINVAL;
    return nullptr;
  }
  if (!IsPowerOfTwo(alignment)) alignment = std::size_t{1} << (64 - __builtin_clzll(alignment));
  return AllocateAligned(bytes, alignment);
}

// POSIX: EINVAL unless the alignment is a power of two multiple of sizeof(void*), ENOMEM
// when out of memory; errno and *out are left alone on failure.
inline int PosixMemalign(void** out, std::size_t alignment, std::size_t bytes) noexcept {
  if (!IsPowerOfTwo(alignment) || alignment % sizeof(void*) != 0) return EINVAL;
  const int saved_errno = errno;
  void* ptr = AllocateAligned(bytes, alignment < kMallocAlignment ? kMallocAlignment : alignment);
  errno = saved_errno;
  if (ptr == nullptr) return ENOMEM;
  *out = ptr;
  return 0;
}

inline void* Valloc(std::size_t bytes) noexcept {
  return AllocateAligned(bytes, platform::PageSize());
}

// pvalloc: page aligned and rounded up to whole pages (pvalloc(0) is one page).
inline void* Pvalloc(std::size_t bytes) noexcept {
  const std::size_t page = platform::PageSize();
  if (bytes > SIZE_MAX - page) [[unlikely]] return FailAllocation(bytes, page);
  const std::size_t rounded = bytes == 0 ? page : (bytes + page - 1) & ~(page - 1);
  return AllocateAligned(rounded, page);
}

inline std::size_t UsableSize(const void* ptr) noexcept { return host::UsableSize(ptr); }

// malloc_trim: gives free spans back to the OS; 1 when anything was released.
int Trim() noexcept;

// operator new's failure path (new_slow.cc): calls the new_handler until it gives up, then
// throws memarena::OutOfMemory (a std::bad_alloc) carrying the host allocator's diagnostic.
[[gnu::cold]] void* NewSlow(std::size_t bytes, std::size_t alignment);
// The same for the nothrow forms: nullptr instead of the exception.
[[gnu::cold]] void* NewNothrowSlow(std::size_t bytes, std::size_t alignment) noexcept;
// operator new while trace_file is recording: the allocation plus its row.
void* NewTraced(std::size_t bytes, std::size_t alignment);
void* NewNothrowTraced(std::size_t bytes, std::size_t alignment) noexcept;

// host::AllocateOr calls the failure path in place of returning nullptr, so operator new is
// a flag test and a jump. NewSlow's exception passes through AllocateOr's slow path.
// The plain forms' constant alignment folds the alignment test away, as in AllocateAligned.
inline void* New(std::size_t bytes, std::size_t alignment) {
  if (TracingOn()) [[unlikely]] return NewTraced(bytes, alignment);
  if (alignment <= host::kMinAlign) return host::AllocateMinAlignedOrThrow(bytes, &NewSlow);
  return host::AllocateOrThrow(bytes, alignment, &NewSlow);
}

inline void* NewNothrow(std::size_t bytes, std::size_t alignment) noexcept {
  if (TracingOn()) [[unlikely]] return NewNothrowTraced(bytes, alignment);
  if (alignment <= host::kMinAlign) return host::AllocateMinAlignedOr(bytes, &NewNothrowSlow);
  return host::AllocateOr(bytes, alignment, &NewNothrowSlow);
}

}  // namespace memarena::dropin
