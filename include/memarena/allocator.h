// memarena::Allocator: the one interface that the host allocator, every arena, the
// planned arena and every adaptor (tracing, limiting, statistics) implement, and the
// contract its non-virtual public functions enforce once for all of them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>

#include "memarena/config.h"
#include "memarena/errors.h"
#include "memarena/stats.h"

namespace memarena {

enum class AllocatorKind { kHost, kDevice };

// The alignment a plain Allocate(bytes) gets, as malloc gives.
inline constexpr std::size_t kDefaultAlignment = alignof(std::max_align_t);

// True when `alignment` is a non-zero power of two.
constexpr bool IsValidAlignment(std::size_t alignment) noexcept {
  return alignment != 0 && (alignment & (alignment - 1)) == 0;
}

// An opaque stream (a cudaStream_t as an integer). kNoStream (0) means "no stream": memory
// freed without a stream is reusable by anyone at once. Allocators without streams ignore it.
using StreamHandle = std::uintptr_t;
inline constexpr StreamHandle kNoStream = 0;
// The stream Deallocate frees on: the one the block was allocated on.
inline constexpr StreamHandle kAllocationStream = ~StreamHandle{0};

// What an implementation's DoDeallocate found: the block was freed, or the pointer is not a
// live block of this allocator (foreign, interior or already freed) and nothing was touched.
enum class FreeResult { kFreed, kNotOwned };

// The interface after RMM's device_memory_resource: the public allocation functions are not
// virtual; they check what every allocator must check, then call the private Do* functions
// an implementation overrides. What the base guarantees to every implementation:
//  - DoAllocate is called only with bytes > 0 and a power-of-two alignment (a zero-byte
//    request returns nullptr and never reaches it; a bad alignment is refused here);
//  - DoDeallocate and DoUsableSize are never called with nullptr;
//  - a std::bad_alloc thrown by DoAllocate becomes nullptr and a counted out-of-memory
//    (num_ooms); an implementation that returns nullptr instead counts its own failure;
//  - a pointer DoDeallocate reports as kNotOwned is handled by one policy for every
//    allocator: MEMARENA_CONF on_invalid_free (see SetInvalidFreeAction).
class Allocator {
 public:
  Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  virtual ~Allocator() = default;

  // Returns `bytes` bytes aligned to `alignment` (a power of two; any size, also above
  // the page size). Allocate(0) returns nullptr, which may be passed to Deallocate. Throws
  // OutOfMemory (what() is the diagnostic) when the request cannot be served, and
  // std::invalid_argument when `alignment` is not a power of two. Costs what TryAllocate costs.
  void* Allocate(std::size_t bytes, std::size_t alignment = kDefaultAlignment);

  // Like Allocate, but returns nullptr instead of throwing (also for a bad alignment and
  // for 0 bytes). Never throws, never formats.
  void* TryAllocate(std::size_t bytes, std::size_t alignment = kDefaultAlignment) noexcept {
    return TryAllocateOnStream(bytes, alignment, kNoStream);
  }

  // TryAllocate for work queued on `stream`. An allocator with stream-ordered reuse (a BFC
  // arena given a StreamFence) hands out a block freed on another stream only once that
  // stream's work before the free has completed; every other allocator ignores `stream`.
  // Inline, so a call through the interface costs the checks and one virtual call.
  void* TryAllocateOnStream(std::size_t bytes, std::size_t alignment,
                            StreamHandle stream) noexcept {
    if (bytes == 0 || !IsValidAlignment(alignment)) [[unlikely]] return nullptr;
    try {
      return DoAllocate(bytes, alignment, stream);
    } catch (const std::bad_alloc&) {
      CountThrownFailure();
      return nullptr;
    }
  }

  // Frees a pointer from this allocator, on the stream it was allocated on. nullptr is a
  // no-op. A pointer that is not a live block of this allocator is handled as
  // on_invalid_free says (abort by default), the same for every allocator.
  void Deallocate(void* ptr) noexcept { DeallocateOnStream(ptr, kAllocationStream); }

  // Deallocate for work queued on `stream` (kNoStream: reusable by anyone at once).
  void DeallocateOnStream(void* ptr, StreamHandle stream) noexcept {
    if (ptr == nullptr) return;
    if (DoDeallocate(ptr, stream) == FreeResult::kNotOwned) [[unlikely]] ReportNotOwned(ptr);
  }

  // Bytes usable at `ptr` (at least what was asked for). 0 for nullptr and for a pointer
  // that is not a live block of this allocator.
  std::size_t UsableSize(const void* ptr) const noexcept {
    return ptr == nullptr ? 0 : DoUsableSize(ptr);
  }

  // A snapshot of the counters, the base's out-of-memory count included. May lock and fold
  // per-thread counters; not for hot paths.
  AllocatorStats GetStats() const;

  // Peaks restart from the current values.
  virtual void ResetPeakStats() = 0;

  // Returns free memory to the OS or device; returns the bytes given back.
  virtual std::size_t ReleaseUnusedSpans() = 0;

  virtual AllocatorKind kind() const noexcept = 0;
  virtual std::string_view name() const noexcept = 0;

  // The diagnostic for a failed request of `bytes`: requested, in use, held, limit,
  // releasable, largest free block, fragmentation and which knob helps. The default
  // builds it from GetStats(); allocators override it to name their own knobs.
  virtual std::string DescribeFailure(std::size_t bytes, std::size_t alignment) const;

 protected:
  // Allocate's throw for a failed request of `bytes`: OutOfMemory with DescribeFailure's
  // text, or, when the heap cannot hold that text (the link-time override at a full
  // ceiling), the default message written into the exception object, so what() still names
  // the caller's request. An allocator whose failure is the heap's own (the host heap)
  // overrides it to build its diagnostic without the heap at all.
  [[noreturn]] virtual void ThrowOutOfMemory(std::size_t bytes, std::size_t alignment) const;

  // For adaptors: the upstream's implementation behind the checks this base already made
  // for the adaptor's own call, so a stack of adaptors checks once.
  static void* AllocateIn(Allocator& upstream, std::size_t bytes, std::size_t alignment,
                          StreamHandle stream) {
    return upstream.DoAllocate(bytes, alignment, stream);
  }
  static FreeResult DeallocateIn(Allocator& upstream, void* ptr, StreamHandle stream) noexcept {
    return upstream.DoDeallocate(ptr, stream);
  }

 private:
  // Serves bytes > 0 at a power-of-two alignment. Returns nullptr after counting the
  // failure in its stats, or throws std::bad_alloc (the base counts that one).
  virtual void* DoAllocate(std::size_t bytes, std::size_t alignment, StreamHandle stream) = 0;
  // Frees a live block (never nullptr) and returns kFreed, or touches nothing and returns
  // kNotOwned. `stream` is kAllocationStream for Deallocate.
  virtual FreeResult DoDeallocate(void* ptr, StreamHandle stream) noexcept = 0;
  virtual std::size_t DoUsableSize(const void* ptr) const noexcept = 0;
  virtual AllocatorStats DoGetStats() const = 0;

  // The cold ends of the inline paths above.
  void CountThrownFailure() noexcept;
  void ReportNotOwned(void* ptr) const noexcept;

  // std::bad_alloc thrown by DoAllocate, turned into nullptr here.
  std::atomic<std::uint64_t> thrown_ooms_{0};
};

// What every allocator does with a pointer it did not hand out or that is already free
// (MEMARENA_CONF on_invalid_free; default kAbort). Process-wide: the host heap (and so
// malloc/free in the drop-in) and every Allocator follow the same setting. Until this is
// called, the setting comes from MEMARENA_CONF when the host allocator starts or when the
// first invalid free happens.
void SetInvalidFreeAction(InvalidFreeAction action) noexcept;
InvalidFreeAction GetInvalidFreeAction() noexcept;
// Invalid frees reported or ignored since the process started, over all allocators.
std::uint64_t InvalidFreeCount() noexcept;

}  // namespace memarena
