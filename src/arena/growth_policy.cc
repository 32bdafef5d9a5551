// Extension sizes of the BFC arena, as ORT's BFCArena::Extend computes them.
#include "arena/growth_policy.h"

#include <algorithm>
#include <limits>

#include "arena/chunk_store.h"

namespace memarena::arena {

GrowthPolicy::GrowthPolicy(const ArenaConfig& config) noexcept
    : strategy_(config.arena_extend_strategy),
      initial_growth_(RoundedBytes(config.initial_growth_chunk_size_bytes)),
      cap_(config.max_power_of_two_extend_bytes),
      current_(RoundedBytes(config.max_mem == 0
                                ? config.initial_chunk_size_bytes
                                : std::min(config.max_mem, config.initial_chunk_size_bytes))) {}

std::size_t GrowthPolicy::NextExtension(std::size_t rounded) noexcept {
  if (strategy_ == ArenaExtendStrategy::kSameAsRequested) return rounded;
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  bool increased = false;
  while (rounded > current_) {
    if (current_ > kMax / 2) {  // cannot double without overflow
      current_ = rounded;
      break;
    }
    current_ *= 2;
    increased = true;
  }
  const std::size_t extend = current_;
  // An extension that did not need doubling doubles the next one anyway, up to the cap.
  if (!increased) current_ = (current_ <= kMax / 2 && current_ * 2 < cap_) ? current_ * 2 : cap_;
  return extend;
}

std::size_t BackoffBytes(std::size_t bytes) noexcept {
  constexpr float kBackpedalFactor = 0.9f;
  return RoundedBytes(static_cast<std::size_t>(static_cast<float>(bytes) * kBackpedalFactor));
}

}  // namespace memarena::arena
