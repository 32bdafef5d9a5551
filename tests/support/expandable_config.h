// The ArenaConfig of an expandable arena, shared by the tests over every virtual-memory
// source (host, simulated, fake CUDA), so each names its threshold and max_mem the same way.
#pragma once

#include <cstddef>

#include "memarena/arena.h"

namespace memarena::testing {

inline ArenaConfig ExpandableConfig(std::size_t decommit_threshold = 0, std::size_t max_mem = 0) {
  ArenaConfig config;
  config.expandable_segments = true;
  config.expandable_decommit_threshold = decommit_threshold;
  config.max_mem = max_mem;
  return config;
}

}  // namespace memarena::testing
