// VirtualMemorySource: one reserved virtual range whose granules are committed and decommitted
// on demand (the source behind expandable_segments:1), and HostVirtualMemorySource over mmap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "memarena/memory_source.h"

namespace memarena {

// Counters of a virtual-memory source, all in bytes except the num_ fields.
struct VirtualMemoryStats {
  std::size_t reserved_bytes = 0;   // the whole virtual reservation
  std::size_t used_bytes = 0;       // address space handed out by Reserve (base to the top)
  std::size_t committed_bytes = 0;  // granules with memory behind them now
  std::uint64_t num_commits = 0;    // successful Commit calls (Reserve's commits included)
  std::uint64_t num_decommits = 0;  // Decommit calls plus the decommits Release made
  std::uint64_t bytes_decommitted = 0;
  std::uint64_t num_refused_commits = 0;
  // Calls that broke the contract below (committing committed granules, decommitting
  // decommitted ones, ranges outside what Reserve handed out, unaligned ranges). They are
  // refused or ignored; any count above 0 is a bug in the caller.
  std::uint64_t num_contract_violations = 0;
};

// A MemorySource that reserves one virtual range up front and puts memory behind it one
// granule at a time. As a plain MemorySource it hands out consecutive committed ranges from
// the bottom of the reservation (GrowsContiguously); Release decommits a range and, when it
// is the last one, lowers the top. The expandable BFC arena additionally decommits
// granule-aligned parts of free chunks with Decommit and recommits them with Commit.
// Thread-safe (one mutex); every call costs one OS or device call per contiguous run.
class VirtualMemorySource : public MemorySource {
 public:
  ~VirtualMemorySource() override;
  VirtualMemorySource(const VirtualMemorySource&) = delete;
  VirtualMemorySource& operator=(const VirtualMemorySource&) = delete;

  // Rounds `bytes` up to the granularity, commits that much at the top of the used range
  // and returns its start; nullptr when the reservation has no room or the commit is refused.
  void* Reserve(std::size_t bytes) noexcept final;
  // Decommits whatever is still committed in a range Reserve returned (same pointer and
  // size) and lowers the top when the range ends there.
  void Release(void* ptr, std::size_t bytes) noexcept final;
  std::size_t Alignment() const noexcept final { return granularity_; }
  bool MergesAdjacent() const noexcept final { return true; }
  bool GrowsContiguously() const noexcept final { return true; }

  // Commits [ptr, ptr + bytes): granule-aligned, inside the used range, every granule
  // decommitted now. Returns false (and commits nothing) when the OS or device refuses or
  // the contract is broken.
  bool Commit(void* ptr, std::size_t bytes) noexcept;
  // Decommits [ptr, ptr + bytes): granule-aligned, inside the used range, every granule
  // committed now. The contents are lost; the addresses stay reserved.
  void Decommit(void* ptr, std::size_t bytes) noexcept;

  // The commit unit: a power of two >= 256 (the page size on the host, the allocation
  // granularity on a device).
  std::size_t Granularity() const noexcept { return granularity_; }
  std::uintptr_t base() const noexcept { return base_; }
  VirtualMemoryStats VirtualStats() const noexcept;

 protected:
  // `base`..`base + reserved_bytes` is the reservation the derived class made; both are
  // multiples of `granularity`. A null base means the reservation failed: every Reserve
  // then returns nullptr.
  VirtualMemorySource(std::uintptr_t base, std::size_t reserved_bytes, std::size_t granularity);

  // Puts memory behind a run of decommitted granules; false when refused.
  virtual bool CommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept = 0;
  // Takes the memory away from a run of committed granules.
  virtual void DecommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept = 0;

 private:
  struct State;
  const std::uintptr_t base_;
  const std::size_t reserved_;
  const std::size_t granularity_;
  std::unique_ptr<State> state_;
};

// Host memory: the reservation is mmap(PROT_NONE), a commit is mprotect(READ|WRITE), a
// decommit maps PROT_NONE over the range again (the pages and their commit charge go back
// to the OS at once). Held bytes = committed bytes.
class HostVirtualMemorySource final : public VirtualMemorySource {
 public:
  static constexpr std::size_t kDefaultReserveBytes = std::size_t{64} << 30;

  // `reserve_bytes` of address space (rounded up to `granularity`); `granularity` 0 means
  // the page size, otherwise a power of two (rounded up to a page). Throws
  // std::invalid_argument for a bad granularity; a reservation the OS refuses leaves a
  // source whose Reserve always fails (VirtualStats().reserved_bytes == 0).
  explicit HostVirtualMemorySource(std::size_t reserve_bytes = kDefaultReserveBytes,
                                   std::size_t granularity = 0);
  ~HostVirtualMemorySource() override;

  bool HostAccessible() const noexcept override { return true; }
  AllocatorKind kind() const noexcept override { return AllocatorKind::kHost; }
  std::string_view name() const noexcept override { return "host_virtual"; }

 protected:
  bool CommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept override;
  void DecommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept override;

 private:
  struct Reservation {
    std::uintptr_t base;
    std::size_t bytes;
    std::size_t granularity;
  };
  static Reservation ReserveRange(std::size_t reserve_bytes, std::size_t granularity);
  explicit HostVirtualMemorySource(Reservation r);
};

}  // namespace memarena
