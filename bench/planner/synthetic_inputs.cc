// The generated planner inputs (see synthetic_inputs.h).
#include "synthetic_inputs.h"

#include <map>
#include <random>
#include <string>

namespace memarena::bench {

std::vector<PlanTensor> SyntheticTrace(std::size_t tensors, std::uint64_t seed) {
  using Action = memarena::TraceAction;
  std::mt19937_64 rng(seed);
  std::vector<memarena::TraceEvent> events;
  std::multimap<std::size_t, std::uint64_t> frees;  // event index at which to free -> id
  for (std::uint64_t id = 0; id < tensors; ++id) {
    while (!frees.empty() && frees.begin()->first <= events.size()) {
      events.push_back({Action::kFree, frees.begin()->second, 0, 1, 0, 0, 0});
      frees.erase(frees.begin());
    }
    const std::size_t size = std::size_t{256} << (rng() % 17);
    events.push_back({Action::kAllocate, id, size + (rng() % 4) * 256, 256, 0, 0, 0});
    const std::size_t life = rng() % 10 == 0 ? 50 + rng() % 400 : 1 + rng() % 8;
    frees.emplace(events.size() + life, id);
  }
  return memarena::TensorsFromTrace(events);
}

std::vector<PlanTensor> RandomIntervals(std::size_t tensors, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<PlanTensor> out;
  for (std::size_t i = 0; i < tensors; ++i) {
    const auto lower = static_cast<std::int64_t>(rng() % 200000);
    const auto length = static_cast<std::int64_t>(rng() % 100 == 0 ? 1 + rng() % 20000
                                                                    : 1 + rng() % 200);
    const std::size_t size = (std::size_t{256} << (rng() % 13)) + (rng() % 8) * 64;
    out.push_back({std::to_string(i), size, 64, lower, lower + length});
  }
  return out;
}

std::vector<PlanTensor> AllAlive(std::size_t tensors, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<PlanTensor> out;
  for (std::size_t i = 0; i < tensors; ++i) {
    out.push_back({std::to_string(i), 64 * (1 + rng() % 1024), 64, 0, 1});
  }
  return out;
}

}  // namespace memarena::bench
