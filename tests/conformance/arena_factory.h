// ArenaFactory: the conformance suite's factory for a BfcArena over any memory source, plain
// or expandable, so each arena test names only its source.
#pragma once

#include <cstddef>
#include <memory>

#include "memarena/arena.h"

namespace memarena::testing {

enum class ArenaMode { kPlain, kExpandable };
enum class CpuAccess { kAddressable, kNotAddressable };

// `MakeSource` returns a fresh source for each arena. An expandable arena decommits at every
// chance (threshold 0): the most commit and decommit churn under the suite's workloads.
template <std::shared_ptr<MemorySource> (*MakeSource)(), ArenaMode kMode, CpuAccess kAccess>
struct ArenaFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    ArenaConfig config;
    config.max_mem = limit_bytes;
    if constexpr (kMode == ArenaMode::kExpandable) {
      config.expandable_segments = true;
      config.expandable_decommit_threshold = 0;
    }
    return std::make_shared<BfcArena>(MakeSource(), config);
  }
  static constexpr std::size_t kMaxAlignment = std::size_t{1} << 20;
  static constexpr bool kHasLimit = true;
  static constexpr bool kAddressable = kAccess == CpuAccess::kAddressable;
};

}  // namespace memarena::testing
