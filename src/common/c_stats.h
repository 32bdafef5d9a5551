// The one conversion from AllocatorStats to the C struct memarena_stats, shared by every C
// entry point that reports stats (the host C API and the CUDA backend's).
#pragma once

#include "memarena/c_api.h"
#include "memarena/stats.h"

namespace memarena::common {

inline memarena_stats ToCStats(const AllocatorStats& s) noexcept {
  return memarena_stats{
      .bytes_in_use = s.bytes_in_use,
      .bytes_requested = s.bytes_requested,
      .bytes_held = s.bytes_held,
      .bytes_releasable = s.bytes_releasable,
      .largest_free_block = s.largest_free_block,
      .fragmentation = s.fragmentation,
      .peak_bytes_in_use = s.peak_bytes_in_use,
      .peak_bytes_requested = s.peak_bytes_requested,
      .peak_bytes_held = s.peak_bytes_held,
      .limit_bytes = s.limit_bytes,
      .num_allocs = s.num_allocs,
      .num_frees = s.num_frees,
      .num_reserves = s.num_reserves,
      .num_releases = s.num_releases,
      .bytes_released = s.bytes_released,
      .num_ooms = s.num_ooms,
      .max_alloc_size = s.max_alloc_size,
  };
}

}  // namespace memarena::common
