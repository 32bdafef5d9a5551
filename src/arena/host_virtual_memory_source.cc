// HostVirtualMemorySource: a PROT_NONE reservation whose pages are committed and decommitted
// through the platform layer.
#include <fmt/format.h>

#include <stdexcept>

#include "memarena/virtual_memory_source.h"
#include "platform/os.h"

namespace memarena {

HostVirtualMemorySource::Reservation HostVirtualMemorySource::ReserveRange(std::size_t reserve_bytes,
                                                                           std::size_t granularity) {
  const std::size_t page = platform::PageSize();
  if (granularity != 0 && !IsValidAlignment(granularity)) {
    throw std::invalid_argument(fmt::format(
        "HostVirtualMemorySource: granularity {} is not a power of two", granularity));
  }
  granularity = granularity < page ? page : granularity;
  if (reserve_bytes == 0 || reserve_bytes > (std::size_t{1} << 47)) {
    throw std::invalid_argument(fmt::format(
        "HostVirtualMemorySource: reserve_bytes {} must be between 1 and 128 TiB", reserve_bytes));
  }
  const std::size_t bytes = (reserve_bytes + granularity - 1) / granularity * granularity;
  void* base = platform::ReserveAddressSpace(bytes, granularity);
  return {reinterpret_cast<std::uintptr_t>(base), bytes, granularity};
}

HostVirtualMemorySource::HostVirtualMemorySource(std::size_t reserve_bytes, std::size_t granularity)
    : HostVirtualMemorySource(ReserveRange(reserve_bytes, granularity)) {}

HostVirtualMemorySource::HostVirtualMemorySource(Reservation r)
    : VirtualMemorySource(r.base, r.bytes, r.granularity) {}

HostVirtualMemorySource::~HostVirtualMemorySource() {
  const VirtualMemoryStats stats = VirtualStats();
  platform::UnmapPages(reinterpret_cast<void*>(base()), stats.reserved_bytes);
}

bool HostVirtualMemorySource::CommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept {
  return platform::CommitPages(reinterpret_cast<void*>(addr), bytes);
}

void HostVirtualMemorySource::DecommitGranules(std::uintptr_t addr, std::size_t bytes) noexcept {
  platform::UncommitPages(reinterpret_cast<void*>(addr), bytes);
}

}  // namespace memarena
