// Helpers shared by the arena tests: an arena over a simulated source, and an overlap check.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>

#include "arena/simulated_memory_source.h"
#include "memarena/arena.h"

namespace memarena::testing {

inline constexpr std::size_t kKiB = std::size_t{1} << 10;
inline constexpr std::size_t kMiB = std::size_t{1} << 20;

struct SimulatedArena {
  explicit SimulatedArena(ArenaConfig config = {},
                          arena::SimulatedMemorySource::Options options = {},
                          std::shared_ptr<StreamFence> fence = nullptr)
      : source(std::make_shared<arena::SimulatedMemorySource>(options)),
        arena(std::make_unique<BfcArena>(source, config, std::move(fence))) {}

  std::shared_ptr<arena::SimulatedMemorySource> source;
  std::unique_ptr<BfcArena> arena;
};

// Live ranges by start address; Add fails the test when a new range overlaps a live one.
class LiveRanges {
 public:
  void Add(const void* p, std::size_t size) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto next = ranges_.lower_bound(a);
    if (next != ranges_.end()) {
      ASSERT_LE(a + size, next->first) << "overlaps the range at " << next->first;
    }
    if (next != ranges_.begin()) {
      const auto prev = std::prev(next);
      ASSERT_LE(prev->first + prev->second, a) << "overlaps the range at " << prev->first;
    }
    ranges_.emplace(a, size);
  }
  void Remove(const void* p) { ranges_.erase(reinterpret_cast<std::uintptr_t>(p)); }
  std::size_t size() const { return ranges_.size(); }

 private:
  std::map<std::uintptr_t, std::size_t> ranges_;
};

}  // namespace memarena::testing
