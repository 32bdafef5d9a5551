// Tensor inputs: inclusive-use conversion, input checks, the lower bound and traces.
#include <fmt/format.h>

#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "memarena/planner.h"
#include "planner/sweep.h"
#include "planner/tensor_checks.h"

namespace memarena {

PlanTensor TensorFromUses(std::string id, std::size_t size, std::size_t alignment,
                          std::int64_t first_use, std::int64_t last_use) {
  if (last_use == std::numeric_limits<std::int64_t>::max()) {
    throw std::invalid_argument(fmt::format(
        "memarena planner: tensor '{}': last_use {} leaves no room for the half-open end",
        id, last_use));
  }
  return PlanTensor{std::move(id), size, alignment, first_use, last_use + 1};
}

namespace planner {

std::optional<std::string> CheckTensor(const PlanTensor& t, std::size_t& total) {
  if (t.lower >= t.upper) {
    return fmt::format("lower {} >= upper {}; lifetimes are half-open [lower, upper) and must "
                       "not be empty",
                       t.lower, t.upper);
  }
  std::int64_t length = 0;
  if (__builtin_sub_overflow(t.upper, t.lower, &length)) {
    return fmt::format("upper {} - lower {} does not fit in a signed 64-bit integer; lifetimes "
                       "may span at most {} steps",
                       t.upper, t.lower, std::numeric_limits<std::int64_t>::max());
  }
  if (!IsValidAlignment(t.alignment)) {
    return fmt::format("alignment {} is not a power of two", t.alignment);
  }
  if (t.alignment > kMaxPlanTotal - total) {
    return fmt::format("alignment {} is too large: sizes plus alignments may total at most {}",
                       t.alignment, kMaxPlanTotal);
  }
  if (t.size > kMaxPlanTotal - total - t.alignment) {
    return fmt::format("size {} is too large: sizes plus alignments may total at most {}",
                       t.size, kMaxPlanTotal);
  }
  total += t.size + t.alignment;
  return std::nullopt;
}

}  // namespace planner

void ValidateTensors(const std::vector<PlanTensor>& tensors) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (auto problem = planner::CheckTensor(tensors[i], total)) {
      throw std::invalid_argument(
          fmt::format("memarena planner: tensor #{} '{}': {}", i, tensors[i].id, *problem));
    }
  }
}

std::size_t LowerBound(const std::vector<PlanTensor>& tensors) {
  std::size_t live = 0;
  std::size_t peak = 0;
  for (const planner::SweepEvent& e : planner::SortedEvents(tensors)) {
    if (e.is_start) {
      live += tensors[e.index].size;
      peak = std::max(peak, live);
    } else {
      live -= tensors[e.index].size;
    }
  }
  return peak;
}

double Plan::Ratio() const noexcept {
  if (lower_bound == 0) return arena_size == 0 ? 1.0 : std::numeric_limits<double>::infinity();
  return static_cast<double>(arena_size) / static_cast<double>(lower_bound);
}

std::vector<PlanTensor> TensorsFromTrace(const std::vector<TraceEvent>& events) {
  std::vector<PlanTensor> tensors;
  std::unordered_map<std::uint64_t, std::size_t> live;  // id -> tensor index
  const auto end_of_run = static_cast<std::int64_t>(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    const auto time = static_cast<std::int64_t>(i);
    if (e.action == TraceAction::kAllocateFailure) continue;  // nothing was placed
    if (e.action == TraceAction::kAllocate) {
      if (!live.emplace(e.pointer, tensors.size()).second) {
        throw std::invalid_argument(fmt::format(
            "memarena planner: trace event {} allocates id {} which is already live", i,
            e.pointer));
      }
      tensors.push_back({fmt::format("{}", e.pointer), e.size, e.alignment, time, end_of_run});
    } else {
      auto it = live.find(e.pointer);
      if (it == live.end()) {
        throw std::invalid_argument(fmt::format(
            "memarena planner: trace event {} frees id {} which is not live", i, e.pointer));
      }
      tensors[it->second].upper = time;
      live.erase(it);
    }
  }
  // A tensor allocated and freed by consecutive events still needs a non-empty lifetime:
  // [i, i+1) already is; an allocation at the last event lives to end_of_run = i+1.
  ValidateTensors(tensors);
  return tensors;
}

}  // namespace memarena
