// Resident bytes of the pages a workload's blocks cover, from mincore: what the allocator
// itself keeps resident for them, unblurred by a sanitizer's shadow memory, the test
// framework or another heap in the process (process RSS counts all of those).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "platform/os.h"

namespace memarena::testing {

struct Block {
  const void* ptr;
  std::size_t size;
};

// Each page counted once, however many blocks share it.
inline std::size_t ResidentBytesOf(const std::vector<Block>& blocks) {
  const std::uintptr_t page = platform::PageSize();
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
  ranges.reserve(blocks.size());
  for (const Block& b : blocks) {
    const auto start = reinterpret_cast<std::uintptr_t>(b.ptr);
    ranges.emplace_back(start & ~(page - 1), (start + b.size + page - 1) & ~(page - 1));
  }
  std::sort(ranges.begin(), ranges.end());
  std::size_t resident = 0;
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  for (const auto& [b, e] : ranges) {
    if (b > end) {
      if (end > begin) resident += platform::ResidentBytesIn(reinterpret_cast<void*>(begin), end - begin);
      begin = b;
    }
    end = std::max(end, e);
  }
  if (end > begin) resident += platform::ResidentBytesIn(reinterpret_cast<void*>(begin), end - begin);
  return resident;
}

// Whether platform::PopulateForWrite works here (MADV_POPULATE_WRITE: Linux 5.14).
inline bool KernelPopulatesForWrite() {
  const std::size_t page = platform::PageSize();
  void* probe = platform::MapPages(page, page);
  const bool ok = probe != nullptr && platform::PopulateForWrite(probe, page);
  if (probe != nullptr) platform::UnmapPages(probe, page);
  return ok;
}

}  // namespace memarena::testing
