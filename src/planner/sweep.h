// Time sweeps over tensor lifetimes: which tensors overlap in time, and MiniMalloc's
// "sections" (the sets of tensors live together just before some lifetime ends).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memarena/planner.h"

namespace memarena::planner {

using Index = std::uint32_t;

// Rounds `value` up to a multiple of `alignment` (a power of two).
constexpr std::size_t AlignUp(std::size_t value, std::size_t alignment) noexcept {
  return (value + alignment - 1) & ~(alignment - 1);
}

// Tensor indices sorted by start time, ends before starts at equal times: the order in
// which a half-open sweep sees them. Returns (time, is_start, index) events.
struct SweepEvent {
  std::int64_t time;
  bool is_start;
  Index index;
};
std::vector<SweepEvent> SortedEvents(const std::vector<PlanTensor>& tensors);

// For each tensor, the tensors whose lifetimes intersect its own. O(n log n + pairs).
std::vector<std::vector<Index>> OverlapLists(const std::vector<PlanTensor>& tensors);

// Sections: section k is the set of tensors live just before the k-th distinct time at
// which some lifetime ends. Every pair of tensors that overlap in time shares a section,
// and each tensor spans a contiguous range of sections [begin, end).
struct Sections {
  std::vector<std::vector<Index>> members;
  std::vector<Index> begin;  // per tensor
  std::vector<Index> end;    // per tensor
};
Sections BuildSections(const std::vector<PlanTensor>& tensors);

}  // namespace memarena::planner
