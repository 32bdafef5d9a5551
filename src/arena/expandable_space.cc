// ExpandableSpace: commit and decommit of granules for the expandable BFC arena.
#include "arena/expandable_space.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace memarena::arena {

std::size_t ExpandableSpace::HolesIn(std::uintptr_t begin, std::uintptr_t end) const {
  return holes_.BytesInside(Down(begin), Up(end));
}

bool ExpandableSpace::CommitCovering(std::uintptr_t begin, std::uintptr_t end) {
  bool ok = true;
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> runs;
  holes_.ForEachInside(Down(begin), Up(end),
                       [&runs](std::uintptr_t b, std::uintptr_t e) { runs.emplace_back(b, e); });
  for (const auto& [b, e] : runs) {
    if (!source_.Commit(reinterpret_cast<void*>(b), e - b)) {
      ok = false;
      break;
    }
    holes_.Remove(b, e);
    ++stats_.num_commits;
    stats_.bytes_held += e - b;
    stats_.peak_bytes_held = std::max(stats_.peak_bytes_held, stats_.bytes_held);
  }
  return ok;
}

void ExpandableSpace::ForEachDecommittable(
    const ChunkStore& store, const Eligible& eligible, std::uintptr_t keep_begin,
    std::uintptr_t keep_end, const std::function<bool(std::uintptr_t, std::uintptr_t)>& fn) const {
  keep_begin = Down(keep_begin);
  keep_end = Up(keep_end);
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> runs;
  // Committed runs of one chunk's interior minus the kept range, highest first: the bottom
  // of a free chunk is what the next allocation from it takes, so it stays committed longest.
  auto visit = [&](const Chunk& c) {
    const std::uintptr_t first = Up(c.addr), last = Down(c.addr + c.size);
    if (first >= last || c.in_use || !eligible(c)) return true;
    runs.clear();
    for (const auto& [pb, pe] : {std::pair{first, std::min(last, keep_begin)},
                                 std::pair{std::max(first, keep_end), last}}) {
      if (pb < pe) {
        holes_.ForEachOutside(pb, pe, [&](std::uintptr_t rb, std::uintptr_t re) {
          runs.emplace_back(rb, re);
        });
      }
    }
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
      if (!fn(it->first, it->second)) return false;
    }
    return true;
  };
  // The end of each region first (for an expandable arena, the end of its range: what growth
  // would add again last), then the largest free chunks.
  for (const auto& [base, region] : store.regions()) {
    if (region.tail != kInvalidChunk && !visit(store.at(region.tail))) return;
  }
  for (int b = kNumBins - 1; b >= 0; --b) {
    const ChunkStore::Bin& bin = store.bin(b);
    for (auto it = bin.rbegin(); it != bin.rend(); ++it) {
      const Chunk& c = store.at(it->handle);
      if (c.next == kInvalidChunk) continue;  // a region's tail: visited above
      if (!visit(c)) return;
    }
  }
}

std::size_t ExpandableSpace::DecommitFree(const ChunkStore& store, const Eligible& eligible,
                                          std::uintptr_t keep_begin, std::uintptr_t keep_end,
                                          std::size_t want) {
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> runs;
  std::size_t planned = 0;
  ForEachDecommittable(store, eligible, keep_begin, keep_end,
                       [&](std::uintptr_t b, std::uintptr_t e) {
                         // Only the top of a run when less is wanted: a free chunk keeps its
                         // bottom committed for the next allocation.
                         const std::size_t missing = want - planned;
                         if (e - b > missing) b = e - std::min<std::size_t>(e - b, Up(missing));
                         runs.emplace_back(b, e);
                         planned += e - b;
                         return planned < want;
                       });
  for (const auto& [b, e] : runs) {
    source_.Decommit(reinterpret_cast<void*>(b), e - b);
    holes_.Add(b, e);
    ++stats_.num_decommits;
    stats_.bytes_decommitted += e - b;
    stats_.bytes_held -= e - b;
  }
  return planned;
}

std::size_t ExpandableSpace::Decommittable(const ChunkStore& store, const Eligible& eligible) const {
  std::size_t total = 0;
  ForEachDecommittable(store, eligible, 0, 0, [&total](std::uintptr_t b, std::uintptr_t e) {
    total += e - b;
    return true;
  });
  return total;
}

std::size_t ExpandableSpace::LargestCommittedFree(const ChunkStore& store) const {
  std::size_t best = 0;
  for (int b = kNumBins - 1; b >= 0; --b) {
    const ChunkStore::Bin& bin = store.bin(b);
    for (auto it = bin.rbegin(); it != bin.rend(); ++it) {
      if (it->size <= best) return best;  // sizes only fall from here on
      best = std::max(best, it->size - holes_.BytesInside(it->addr, it->addr + it->size));
    }
  }
  return best;
}

std::size_t ExpandableSpace::ForgetRegion(std::uintptr_t begin, std::size_t size) {
  const std::size_t holes = holes_.BytesInside(begin, begin + size);
  holes_.Remove(begin, begin + size);
  return size - holes;
}

void ExpandableSpace::FillStats(AllocatorStats& stats) const noexcept {
  const VirtualMemoryStats v = source_.VirtualStats();
  stats.virtual_bytes_reserved = v.reserved_bytes;
  stats.virtual_bytes_used = v.used_bytes;
}

}  // namespace memarena::arena
