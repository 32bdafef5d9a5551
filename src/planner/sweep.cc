// Time sweeps over lifetimes: overlap lists and sections, shared by every planner part.
#include "planner/sweep.h"

#include <algorithm>

namespace memarena::planner {

std::vector<SweepEvent> SortedEvents(const std::vector<PlanTensor>& tensors) {
  std::vector<SweepEvent> events;
  events.reserve(tensors.size() * 2);
  for (Index i = 0; i < tensors.size(); ++i) {
    events.push_back({tensors[i].lower, true, i});
    events.push_back({tensors[i].upper, false, i});
  }
  // Half-open lifetimes: at equal times an end comes before a start.
  std::sort(events.begin(), events.end(), [](const SweepEvent& a, const SweepEvent& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.is_start != b.is_start) return !a.is_start;
    return a.index < b.index;
  });
  return events;
}

namespace {
// The live set with O(1) insert and erase (swap with the last element).
class ActiveSet {
 public:
  explicit ActiveSet(std::size_t n) : position_(n, 0) {}
  void Insert(Index i) {
    position_[i] = static_cast<Index>(items_.size());
    items_.push_back(i);
  }
  void Erase(Index i) {
    const Index pos = position_[i];
    items_[pos] = items_.back();
    position_[items_[pos]] = pos;
    items_.pop_back();
  }
  const std::vector<Index>& items() const noexcept { return items_; }

 private:
  std::vector<Index> items_;
  std::vector<Index> position_;
};
}  // namespace

std::vector<std::vector<Index>> OverlapLists(const std::vector<PlanTensor>& tensors) {
  std::vector<std::vector<Index>> overlaps(tensors.size());
  ActiveSet active(tensors.size());
  for (const SweepEvent& e : SortedEvents(tensors)) {
    if (!e.is_start) {
      active.Erase(e.index);
      continue;
    }
    for (Index other : active.items()) {
      overlaps[e.index].push_back(other);
      overlaps[other].push_back(e.index);
    }
    active.Insert(e.index);
  }
  return overlaps;
}

Sections BuildSections(const std::vector<PlanTensor>& tensors) {
  Sections s;
  s.begin.assign(tensors.size(), 0);
  s.end.assign(tensors.size(), 0);
  ActiveSet active(tensors.size());
  bool have_last_end = false;
  std::int64_t last_end = 0;
  for (const SweepEvent& e : SortedEvents(tensors)) {
    if (e.is_start) {
      s.begin[e.index] = static_cast<Index>(s.members.size());
      active.Insert(e.index);
      continue;
    }
    // The first end at a new time closes a section holding everything live now.
    if (!have_last_end || last_end < e.time) {
      have_last_end = true;
      last_end = e.time;
      s.members.push_back(active.items());
    }
    active.Erase(e.index);
    s.end[e.index] = static_cast<Index>(s.members.size());
  }
  return s;
}

}  // namespace memarena::planner
