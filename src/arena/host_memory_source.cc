// HostMemorySource: arena regions from anonymous mmap, through the platform layer only.
#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "memarena/memory_source.h"
#include "platform/os.h"

namespace memarena {
namespace {

// Page-rounded length of a range; 0 when rounding would overflow.
std::size_t MappedLength(std::size_t bytes) noexcept {
  const std::size_t page = platform::PageSize();
  if (bytes > std::numeric_limits<std::size_t>::max() - page) return 0;
  return (bytes + page - 1) / page * page;
}

}  // namespace

HostMemorySource::HostMemorySource(std::size_t alignment, Placement placement)
    : placement_(placement) {
  const std::size_t page = platform::PageSize();
  if (alignment != 0 && !IsValidAlignment(alignment)) {
    throw std::invalid_argument(
        fmt::format("HostMemorySource: alignment {} is not a power of two", alignment));
  }
  alignment_ = alignment < page ? page : alignment;
}

void* HostMemorySource::Reserve(std::size_t bytes) noexcept {
  const std::size_t length = MappedLength(bytes);
  if (length == 0) return nullptr;
  if (placement_ == Placement::kFallingAddresses) {
    if (void* region = ReserveBelowLowest(length)) return region;
  }
  void* region = platform::MapPages(length, alignment_);
  if (placement_ == Placement::kFallingAddresses && region != nullptr) NoteRegionAt(region);
  return region;
}

void HostMemorySource::NoteRegionAt(const void* region) noexcept {
  const auto start = reinterpret_cast<std::uintptr_t>(region);
  std::uintptr_t lowest = lowest_.load(std::memory_order_relaxed);
  while ((lowest == 0 || start < lowest) &&
         !lowest_.compare_exchange_weak(lowest, start, std::memory_order_relaxed)) {
  }
}

// A taken range sends the search twice as far down each time, so a large mapping below
// costs a few tries. Two threads may race for one range: MapPagesAt refuses the loser,
// which looks further down.
void* HostMemorySource::ReserveBelowLowest(std::size_t length) noexcept {
  constexpr int kTries = 64;
  std::uintptr_t at = lowest_.load(std::memory_order_relaxed);
  std::size_t step = length;
  for (int tries = 0; tries < kTries && at > step + alignment_; ++tries, step *= 2) {
    at = (at - step) & ~(std::uintptr_t{alignment_} - 1);
    if (void* region = platform::MapPagesAt(reinterpret_cast<void*>(at), length)) {
      NoteRegionAt(region);
      return region;
    }
  }
  return nullptr;
}

void HostMemorySource::Release(void* ptr, std::size_t bytes) noexcept {
  platform::UnmapPages(ptr, MappedLength(bytes));
}

}  // namespace memarena
