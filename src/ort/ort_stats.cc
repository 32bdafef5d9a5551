// memarena's AllocatorStats under the key names of ORT's allocator stats (OrtAllocator::
// GetStats, AllocatorGetStats), so tools that read ORT's stats read memarena's unchanged.
#include <fmt/format.h>

#include "memarena/ort.h"

namespace memarena::ort {

std::vector<std::pair<std::string, std::string>> OrtStatsEntries(const AllocatorStats& stats,
                                                                 std::uint64_t num_reserves) {
  const auto text = [](auto value) { return fmt::format("{}", value); };
  return {
      // ORT writes -1 for "no limit"; memarena's 0 means the same.
      {"Limit", stats.limit_bytes == 0 ? std::string("-1") : text(stats.limit_bytes)},
      {"InUse", text(stats.bytes_in_use)},
      // ORT's total_allocated_bytes is what its arena obtained from the device: memarena's held.
      {"TotalAllocated", text(stats.bytes_held)},
      {"MaxInUse", text(stats.peak_bytes_in_use)},
      {"NumAllocs", text(stats.num_allocs)},
      {"NumReserves", text(num_reserves)},
      {"NumArenaExtensions", text(stats.num_arena_extensions)},
      {"NumArenaShrinkages", text(stats.num_arena_shrinkages)},
      {"MaxAllocSize", text(stats.max_alloc_size)},
      {"memarena.PeakHeld", text(stats.peak_bytes_held)},
      {"memarena.Requested", text(stats.bytes_requested)},
      {"memarena.Releasable", text(stats.bytes_releasable)},
      {"memarena.NumOoms", text(stats.num_ooms)},
  };
}

}  // namespace memarena::ort
