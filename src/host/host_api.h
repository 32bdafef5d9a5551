// The host heap's C++-level entry points, shared by HostAllocator() and the drop-in
// (malloc/new override) layer. Usable from a process's first malloc: nothing here needs
// config, static constructors or malloc.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "memarena/config.h"

namespace memarena::host {

// The addresses the heap maps: its pagemap covers 48 bits. A request no block inside them can
// serve fails at once, with no memory asked of the OS, nothing released and no ceiling to
// blame (a size or alignment computed from bad input, most likely). The failure messages
// say so.
inline constexpr std::size_t kMaxAllocationBytes = std::size_t{1} << 48;

// Whether no block of `bytes` aligned to `alignment` fits below kMaxAllocationBytes. Address
// 0 is never mapped, so the lowest place is `alignment` itself.
constexpr bool NoBlockCanSpan(std::size_t bytes, std::size_t alignment) noexcept {
  return alignment >= kMaxAllocationBytes || bytes > kMaxAllocationBytes - alignment;
}

// `bytes` bytes aligned to `alignment` (a power of two, or 0 for the default 16; the caller
// checks it: the Allocator base class and the drop-in's C rules do, checked mode asserts it).
// nullptr on failure (ceiling reached after releasing free memory, the OS refused, or
// NoBlockCanSpan); bytes == 0 returns a unique minimal block. Lock-free for small
// sizes when the thread cache has an object.
void* Allocate(std::size_t bytes, std::size_t alignment) noexcept;

// What a caller does when an allocation fails (the drop-in's errno and message, operator
// new's new_handler loop); its result is the allocation's.
using AllocationFailure = void* (*)(std::size_t bytes, std::size_t alignment) noexcept;
using ThrowingAllocationFailure = void* (*)(std::size_t bytes, std::size_t alignment);

// Allocate, with `on_failure(bytes, alignment)` called in place of returning nullptr. A
// caller that would test the result for null (malloc, operator new) can then jump here
// instead of calling, and keeps no frame of its own: 4 % of a small-object program.
void* AllocateOr(std::size_t bytes, std::size_t alignment, AllocationFailure on_failure) noexcept;
// The same for a failure path that may throw (operator new); the exception passes through.
void* AllocateOrThrow(std::size_t bytes, std::size_t alignment,
                      ThrowingAllocationFailure on_failure);
// AllocateOr and AllocateOrThrow at the default alignment of 16 (malloc's and plain
// operator new's), which every size class gives: on_failure gets 16. Without the alignment
// argument the fast path has no alignment test and its caller no argument to set (3 of an
// allocation's ~39 instructions, wrapper included; issue 12, `trees`).
void* AllocateMinAlignedOr(std::size_t bytes, AllocationFailure on_failure) noexcept;
void* AllocateMinAlignedOrThrow(std::size_t bytes, ThrowingAllocationFailure on_failure);

// Like Allocate, for an attempt the caller can do without (realloc's headroom): on
// failure it returns nullptr at once, without releasing memory and without counting an
// out-of-memory event.
void* AllocateIfAvailable(std::size_t bytes, std::size_t alignment) noexcept;

// The diagnostic of a failed allocation (HostAllocator().DescribeFailure's text: requested,
// in use, held, limit and the knob), written into `out` without the heap, which has just
// failed: cut to fit and NUL-terminated. Operator new's exception carries it.
std::string_view DescribeFailure(std::span<char> out, std::size_t bytes,
                                 std::size_t alignment) noexcept;

// Frees a block from Allocate. nullptr is a no-op. A double free, a pointer inside a
// block and a pointer the heap never handed out are caught (small blocks on the fast path,
// with a mark in the freed object's second word and an object-start check) and handled
// as MEMARENA_CONF on_invalid_free says: abort with a message by default.
void Free(void* ptr) noexcept;

// Free of a block the caller says is `bytes` long (the sized operator delete). The class
// comes from the size, so the thread cache's list is found without waiting on the pagemap;
// the pagemap entry is still read and must name the same class, and the checks of Free
// apply. A block whose size disagrees (a wrong size, an aligned or sampled block) is freed
// by Free, as if no size had been given.
void FreeSized(void* ptr, std::size_t bytes) noexcept;

// Free of a block that realloc moved away from; `usable` is its UsableSize. Checked as
// Free; a block of 8 KiB and up then goes on to its span instead of staying in the
// thread cache (heap.cc kMovedUncachedSize says why).
void FreeMoved(void* ptr, std::size_t usable) noexcept;

// realloc's two rules, shared by ReallocateOr and the drop-in's general path
// (dropin::ReallocBlock) so the two cannot drift apart: a block of `usable` bytes is kept
// for a request that fits it and uses at least half of it; a block that must grow by less
// than half its size gets 50 % headroom (a buffer grown by small steps is copied O(log n)
// times).
constexpr bool ReallocKeeps(std::size_t usable, std::size_t bytes) noexcept {
  return bytes <= usable && bytes >= usable / 2;
}
constexpr std::size_t ReallocRoomy(std::size_t usable) noexcept { return usable + usable / 2; }

// realloc's common cases on one pagemap lookup, for `bytes` != 0: a live block that still
// fits `bytes` and stays at least half used is kept (`ptr` returned); a live small block
// below 8 KiB (one a move leaves in the thread cache) that does not is moved: a new block
// (with 50 % headroom when it grows by less than that) gets the contents and `ptr` is freed.
// Every other case, and a new block that is not available without releasing memory, is
// `general(ptr, bytes)`'s, called with `ptr` untouched (a tail call: realloc keeps no
// frame). Nothing here traces: the caller takes `general` while tracing.
using ReallocFallback = void* (*)(void* ptr, std::size_t bytes) noexcept;
void* ReallocateOr(void* ptr, std::size_t bytes, ReallocFallback general) noexcept;

// Grows the live large block at `ptr` (one of more than kMaxSmallSize bytes, not sampled)
// in place to at least `bytes` bytes when the pages after it are free (realloc without a
// copy); its contents stay. False, with the block unchanged, for any other block, when
// those pages are in use, when the ceiling refuses the pages to commit, or when a move is
// the better choice (PageHeap::GrowInPlace; or the thread's sampling interval runs out, so
// the moved block is sampled). Takes the page heap's lock; the caller has checked that
// `ptr` is live (UsableSize).
bool GrowInPlace(void* ptr, std::size_t bytes) noexcept;

// The caller is about to write the first `bytes` of `ptr`, a block it just allocated
// (realloc's copy into its new block). A page run whose pages came from the OS has its
// whole pages among them faulted in by one system call, not one fault per page
// (PageHeap::PrefaultForWrite); any other block is left alone. Not for the fast path: it
// reads the pagemap.
void PrefaultForWrite(void* ptr, std::size_t bytes) noexcept;

// calloc's zeroing of `ptr`, a block of at least `bytes` just allocated: a page run whose
// pages all came from the OS unwritten reads as zero already and is left untouched, so its
// pages stay out of RSS until the program writes them (glibc's calloc skips the fill of a
// chunk it just mapped alike); any other block is filled.
void ZeroNew(void* ptr, std::size_t bytes) noexcept;

// Allocate and Free without the misuse checks on their fast paths (no freed mark, no
// object-start test): for host_bench only, which prices the checks against them in one
// run. A double or interior free through FreeUnchecked corrupts the heap silently.
void* AllocateUnchecked(std::size_t bytes, std::size_t alignment) noexcept;
void FreeUnchecked(void* ptr) noexcept;

// Bytes usable at `ptr` (at least what was asked); 0 for nullptr and for any pointer that
// is not the start of a live block (inside a block, freed, or not the heap's).
std::size_t UsableSize(const void* ptr) noexcept;

// Handles `ptr`, which UsableSize found not to be a live block, as an invalid `operation`
// (e.g. "realloc"): reports it as on_invalid_free says.
void ReportInvalidPointer(const void* ptr, const char* operation) noexcept;

// True when `ptr` lies in address space the host heap reserved (a pagemap lookup, then
// the list of reservations under the heap lock).
bool Owns(const void* ptr) noexcept;

// Applies the ceiling, the release ratio and the thread-cache size. A ceiling below what
// is held even after releasing free spans is refused with a message on stderr.
void ApplyConfig(const HostConfig& config);

// Returns the calling thread's cached objects to the central lists.
void FlushThreadCache() noexcept;

}  // namespace memarena::host
