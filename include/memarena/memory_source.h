// MemorySource: where an arena gets its regions (mmap, cudaMalloc, or a simulation), and
// HostMemorySource, the default mmap source.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "memarena/allocator.h"

namespace memarena {

// What a source knows about the memory behind it (cudaMemGetInfo for a device).
struct SourceCapacity {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};

// A source of regions for BfcArena. Implementations must be thread-safe; the arena calls
// them under its own lock, and only on growth, shrink and destruction (never per allocation).
class MemorySource {
 public:
  virtual ~MemorySource() = default;

  // Returns the start of `bytes` (> 0, a multiple of 256) fresh bytes aligned to at least
  // Alignment(), or nullptr when the source refuses. Never throws. Costs one OS or device call.
  virtual void* Reserve(std::size_t bytes) noexcept = 0;

  // Gives back a range exactly as Reserve returned it (same pointer and size).
  virtual void Release(void* ptr, std::size_t bytes) noexcept = 0;

  // The alignment of every range Reserve returns: a power of two, at least 256.
  virtual std::size_t Alignment() const noexcept = 0;

  // True when two ranges that happen to be adjacent in the address space may be used as
  // one, i.e. a chunk may straddle the boundary (mmap: yes; cudaMalloc: no).
  virtual bool MergesAdjacent() const noexcept = 0;

  // True when the next range normally starts where the previous one ended (a reserved
  // virtual range mapped on demand, like expandable segments). An arena may then extend by
  // only what a free chunk at the end lacks. Default: false.
  virtual bool GrowsContiguously() const noexcept { return false; }

  // Free and total bytes of the memory behind the source, when it knows them.
  virtual std::optional<SourceCapacity> Capacity() const noexcept { return std::nullopt; }
  // True when the ranges are memory this process reads and writes (mmap), so an arena in an
  // AddressSanitizer build may poison its free parts. Device memory and simulated address
  // ranges must not be touched: default false.
  virtual bool HostAccessible() const noexcept { return false; }

  virtual AllocatorKind kind() const noexcept = 0;
  virtual std::string_view name() const noexcept = 0;
};

// Anonymous private mmap through the platform layer. Ranges are page-rounded inside the
// source; the arena sees exactly what it asked for. Adjacent mappings may be merged.
class HostMemorySource final : public MemorySource {
 public:
  // Where the regions go.
  // - kAnywhere: where mmap puts them.
  // - kFallingAddresses: each below every region before it (skipping ranges mapped
  //   already; where mmap puts it when 64 tries find none). An arena's best fit
  //   breaks ties between free chunks of one size by address, so with this order a replay
  //   of a trace makes the same choices in every process, wherever mmap has holes.
  enum class Placement { kAnywhere, kFallingAddresses };

  // `alignment` 0 means the page size; otherwise a power of two (rounded up to a page).
  explicit HostMemorySource(std::size_t alignment = 0, Placement placement = Placement::kAnywhere);

  void* Reserve(std::size_t bytes) noexcept override;
  void Release(void* ptr, std::size_t bytes) noexcept override;
  std::size_t Alignment() const noexcept override { return alignment_; }
  bool MergesAdjacent() const noexcept override { return true; }
  bool HostAccessible() const noexcept override { return true; }
  AllocatorKind kind() const noexcept override { return AllocatorKind::kHost; }
  std::string_view name() const noexcept override { return "host_mmap"; }

 private:
  void* ReserveBelowLowest(std::size_t length) noexcept;
  // Lowers lowest_ to `region` when it is below.
  void NoteRegionAt(const void* region) noexcept;

  std::size_t alignment_;
  Placement placement_;
  // kFallingAddresses: the start of the lowest region so far (0 before the first).
  std::atomic<std::uintptr_t> lowest_{0};
};

}  // namespace memarena
