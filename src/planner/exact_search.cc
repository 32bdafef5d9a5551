// A MiniMalloc-style exact search (own code; ideas from google/minimalloc's solver.cc):
//  - canonical solutions only: buffers are placed in non-decreasing offset order, each at
//    the lowest offset its placed neighbours allow (its "min offset");
//  - dominance: never place a buffer at or above the lowest height another unplaced buffer
//    could reach, since that buffer would fit in the gap below;
//  - inference over sections (sets of buffers live together): a section's floor plus the
//    sizes still to place in it must stay within the capacity;
//  - dynamic decomposition: once no unplaced buffer crosses a section boundary, the two
//    sides are solved independently;
//  - "hatless" pruning: a buffer nothing unplaced overlaps is never tried in two places;
//  - round robin over three static preorderings with a doubling node limit.
#include "planner/exact_search.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <string_view>

#include "planner/placer.h"
#include "planner/sweep.h"

namespace memarena::planner {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

enum class Outcome { kOk, kNotFound, kTimeout, kNodeLimit };

struct Partition {
  std::vector<Index> buffers;
  Index section_lo = 0;
  Index section_hi = 0;  // exclusive
};

struct Candidate {
  std::size_t offset;
  Index rank;  // position in the partition's preorder
};

// Preorder keys, most important first: T = largest remaining total of the buffer's sections,
// A = area (size x lifetime), W = lifetime width.
constexpr std::array<std::string_view, 3> kHeuristics = {"WAT", "TAW", "TWA"};

class Search {
 public:
  Search(const std::vector<PlanTensor>& tensors, std::size_t capacity, Clock::time_point deadline)
      : t_(tensors), capacity_(capacity), deadline_(deadline) {}

  ExactResult Run() {
    ExactResult result;
    const std::size_t n = t_.size();
    sections_ = BuildSections(t_);
    overlaps_ = OverlapLists(t_);
    const std::size_t num_sections = sections_.members.size();
    total_.assign(num_sections, 0);
    floor_.assign(num_sections, 0);
    for (std::size_t s = 0; s < num_sections; ++s) {
      for (Index b : sections_.members[s]) total_[s] += t_[b].size;
      // A section is a set of buffers live at one moment: its sum must fit.
      if (total_[s] > capacity_) {
        result.status = ExactStatus::kInfeasible;
        return result;
      }
    }
    max_total_.assign(n, 0);
    cuts_.assign(num_sections > 0 ? num_sections - 1 : 0, 0);
    for (Index b = 0; b < n; ++b) {
      for (Index s = sections_.begin[b]; s + 1 < sections_.end[b]; ++s) ++cuts_[s];
    }
    offset_.assign(n, kNone);
    min_offset_.assign(n, 0);
    solution_.assign(n, 0);
    witness_.assign(num_sections, 0);
    for (std::size_t s = 0; s < num_sections; ++s) {
      if (!sections_.members[s].empty()) witness_[s] = sections_.members[s].front();
    }
    const std::vector<Partition> partitions = InitialPartitions();

    std::int64_t node_limit = static_cast<std::int64_t>(std::max<std::size_t>(n, 1));
    for (;;) {
      node_limit *= 2;
      for (std::string_view heuristic : kHeuristics) {
        heuristic_ = heuristic;
        nodes_remaining_ = node_limit;
        Outcome outcome = Outcome::kOk;
        for (const Partition& p : partitions) {
          outcome = SolvePartition(p);
          if (outcome != Outcome::kOk) break;
        }
        result.nodes = nodes_;
        if (outcome == Outcome::kOk) {
          result.status = ExactStatus::kFound;
          result.offsets = solution_;
          return result;
        }
        if (outcome == Outcome::kNotFound) {
          result.status = ExactStatus::kInfeasible;
          return result;
        }
        if (outcome == Outcome::kTimeout) {
          result.status = ExactStatus::kTimeout;
          return result;
        }
      }
    }
  }

 private:
  std::vector<Partition> InitialPartitions() const {
    std::vector<Partition> partitions;
    const auto num_sections = static_cast<Index>(sections_.members.size());
    Index lo = 0;
    for (Index s = 0; s < num_sections; ++s) {
      if (s + 1 == num_sections || cuts_[s] == 0) {
        partitions.push_back({{}, lo, s + 1});
        lo = s + 1;
      }
    }
    for (Index b = 0; b < t_.size(); ++b) {
      for (Partition& p : partitions) {
        if (sections_.begin[b] >= p.section_lo && sections_.begin[b] < p.section_hi) {
          p.buffers.push_back(b);
          break;
        }
      }
    }
    return partitions;
  }

  bool Before(Index a, Index b) const {
    for (char key : heuristic_) {
      if (key == 'T' && max_total_[a] != max_total_[b]) return max_total_[a] > max_total_[b];
      if (key == 'A') {
        const double area_a = static_cast<double>(t_[a].size) * Width(a);
        const double area_b = static_cast<double>(t_[b].size) * Width(b);
        if (area_a != area_b) return area_a > area_b;
      }
      if (key == 'W' && Width(a) != Width(b)) return Width(a) > Width(b);
    }
    return a < b;
  }
  double Width(Index b) const { return static_cast<double>(LifetimeLength(t_[b])); }

  Outcome SolvePartition(const Partition& partition) {
    // 'T' looks at what is still to be placed in each section, now.
    for (Index b : partition.buffers) {
      max_total_[b] = 0;
      for (Index s = sections_.begin[b]; s < sections_.end[b]; ++s) {
        max_total_[b] = std::max(max_total_[b], total_[s]);
      }
    }
    std::vector<Index> preorder = partition.buffers;
    std::sort(preorder.begin(), preorder.end(), [this](Index a, Index b) { return Before(a, b); });
    std::vector<Candidate> all(preorder.size());
    for (Index r = 0; r < preorder.size(); ++r) all[r] = {0, r};
    return Dfs(partition, preorder, all, 0, 0);
  }

  Outcome Dfs(const Partition& partition, const std::vector<Index>& preorder,
              const std::vector<Candidate>& previous, std::size_t min_offset, Index min_rank) {
    if (nodes_remaining_-- <= 0) return Outcome::kNodeLimit;
    // Reading the clock costs about as much as a small node: look every 64 nodes.
    if (++nodes_ % 64 == 0 && Clock::now() >= deadline_) return Outcome::kTimeout;
    // One candidate buffer per depth, reused: a node allocates nothing once warm. A deque
    // keeps the parents' buffers in place while a deeper one is added.
    struct DepthGuard {
      std::size_t& depth;
      explicit DepthGuard(std::size_t& d) : depth(++d) {}
      ~DepthGuard() { --depth; }
    } guard(depth_);
    while (candidate_pool_.size() <= depth_) candidate_pool_.emplace_back();
    std::vector<Candidate>& candidates = candidate_pool_[depth_];
    candidates.clear();
    std::size_t min_height = kNone;
    for (const Candidate& c : previous) {
      const Index b = preorder[c.rank];
      if (offset_[b] != kNone) continue;
      candidates.push_back({min_offset_[b], c.rank});
      min_height = std::min(min_height, min_offset_[b] + t_[b].size);
    }
    if (candidates.empty()) {
      for (Index b : partition.buffers) solution_[b] = offset_[b];
      return Outcome::kOk;
    }
    // `previous` was in this order and only some offsets rose: insertion sort is near linear.
    auto before = [](const Candidate& a, const Candidate& b) {
      return a.offset != b.offset ? a.offset < b.offset : a.rank < b.rank;
    };
    for (std::size_t k = 1; k < candidates.size(); ++k) {
      const Candidate moving = candidates[k];
      std::size_t j = k;
      for (; j > 0 && before(moving, candidates[j - 1]); --j) candidates[j] = candidates[j - 1];
      candidates[j] = moving;
    }
    const std::size_t max_offset = MaxOffset(partition);
    for (const Candidate& c : candidates) {
      // Canonical order: offsets never decrease along a branch.
      if (c.offset < min_offset || (c.offset == min_offset && c.rank < min_rank)) continue;
      // Dominance: a gap below this offset would fit another unplaced buffer.
      if (c.offset >= min_height) break;
      // Every later buffer of a section sits at or above this offset: it must leave room.
      if (c.offset > max_offset) break;
      const Index b = preorder[c.rank];
      offset_[b] = c.offset;
      const std::size_t offset_mark = offset_changes_.size();
      const std::size_t section_mark = section_changes_.size();
      const bool covered = RaiseNeighbours(b);
      RaiseFloors(b);
      Outcome outcome = Outcome::kNotFound;
      if (Fits(section_mark)) {
        outcome = PlaceAndContinue(partition, preorder, candidates, c.offset, c.rank, b);
      }
      Restore(b, offset_mark, section_mark);
      offset_[b] = kNone;
      if (outcome != Outcome::kNotFound) return outcome;
      // Nothing overlaps `b` any more, so where it goes cannot matter to the rest: if the
      // rest failed with it here, it fails with any other buffer first too.
      if (!covered) break;
    }
    return Outcome::kNotFound;
  }

  // Unplaced buffers overlapping `b` cannot start below its top any more. Returns false
  // when `b` has no unplaced neighbour at all (nothing will ever sit on it).
  bool RaiseNeighbours(Index b) {
    const std::size_t height = offset_[b] + t_[b].size;
    // Every raised neighbour overlaps `b`, so their sections form one range with b's own
    // (any gap between them lies inside b's sections, which RaiseFloors checks anyway).
    affected_lo_ = sections_.begin[b];
    affected_hi_ = sections_.end[b];
    bool covered = false;
    for (Index o : overlaps_[b]) {
      if (offset_[o] != kNone) continue;
      covered = true;
      if (min_offset_[o] >= height) continue;
      offset_changes_.push_back({o, min_offset_[o]});
      min_offset_[o] = AlignUp(height, t_[o].alignment);
      affected_lo_ = std::min(affected_lo_, sections_.begin[o]);
      affected_hi_ = std::max(affected_hi_, sections_.end[o]);
    }
    return covered;
  }

  // Sections of `b` now start at its top; a section's floor is also at least the lowest
  // min offset among its unplaced buffers.
  void RaiseFloors(Index b) {
    const std::size_t height = offset_[b] + t_[b].size;
    for (Index s = sections_.begin[b]; s < sections_.end[b]; ++s) {
      section_changes_.push_back({s, floor_[s]});
      floor_[s] = height;
      total_[s] -= t_[b].size;
    }
    for (Index s = affected_lo_; s < affected_hi_; ++s) {
      // Usually some unplaced member still sits at or below the floor; the one that did
      // last time is checked first, which spares the scan (a hint: never restored).
      const Index witness = witness_[s];
      if (offset_[witness] == kNone && min_offset_[witness] <= floor_[s]) continue;
      std::size_t lowest = kNone;
      for (Index o : sections_.members[s]) {
        if (offset_[o] != kNone) continue;
        lowest = std::min(lowest, min_offset_[o]);
        if (lowest <= floor_[s]) {  // the floor cannot rise: stop scanning
          witness_[s] = o;
          break;
        }
      }
      if (lowest != kNone && floor_[s] < lowest) {
        section_changes_.push_back({s, floor_[s]});
        floor_[s] = lowest;
      }
    }
  }

  void Restore(Index b, std::size_t offset_mark, std::size_t section_mark) {
    while (section_changes_.size() > section_mark) {
      floor_[section_changes_.back().index] = section_changes_.back().value;
      section_changes_.pop_back();
    }
    for (Index s = sections_.begin[b]; s < sections_.end[b]; ++s) total_[s] += t_[b].size;
    while (offset_changes_.size() > offset_mark) {
      min_offset_[offset_changes_.back().index] = offset_changes_.back().value;
      offset_changes_.pop_back();
    }
  }

  // The highest offset the next buffer may take: with placements in non-decreasing offset
  // order, all that remains of a section stacks above it. kNone if no section limits it.
  std::size_t MaxOffset(const Partition& partition) const {
    std::size_t max_offset = kNone;
    for (Index s = partition.section_lo; s < partition.section_hi; ++s) {
      if (total_[s] != 0) max_offset = std::min(max_offset, capacity_ - total_[s]);
    }
    return max_offset;
  }

  // The sections whose floor or total changed since `section_mark` still have room for
  // what remains in them. (Unchanged sections passed this check at the parent, and
  // MaxOffset covers the offset of the buffer just placed.)
  bool Fits(std::size_t section_mark) const {
    for (std::size_t k = section_mark; k < section_changes_.size(); ++k) {
      const Index s = section_changes_[k].index;
      if (floor_[s] + total_[s] > capacity_) return false;
    }
    return true;
  }

  Outcome PlaceAndContinue(const Partition& partition, const std::vector<Index>& preorder,
                           const std::vector<Candidate>& candidates, std::size_t offset,
                           Index rank, Index b) {
    solution_[b] = offset_[b];
    std::vector<Index> cutpoints = {partition.section_lo};
    for (Index s = sections_.begin[b]; s + 1 < sections_.end[b]; ++s) {
      if (--cuts_[s] == 0) cutpoints.push_back(s + 1);
    }
    Outcome outcome = Outcome::kOk;
    if (cutpoints.size() == 1) {
      outcome = Dfs(partition, preorder, candidates, offset, rank);
    } else {
      cutpoints.push_back(partition.section_hi);
      for (std::size_t k = 1; k < cutpoints.size() && outcome == Outcome::kOk; ++k) {
        Partition sub{{}, cutpoints[k - 1], cutpoints[k]};
        for (Index o : partition.buffers) {
          if (offset_[o] == kNone && sections_.begin[o] < sub.section_hi &&
              sub.section_lo < sections_.end[o]) {
            sub.buffers.push_back(o);
          }
        }
        if (!sub.buffers.empty()) outcome = SolvePartition(sub);
      }
    }
    for (Index s = sections_.begin[b]; s + 1 < sections_.end[b]; ++s) ++cuts_[s];
    return outcome;
  }

  struct Change {
    Index index;
    std::size_t value;
  };

  const std::vector<PlanTensor>& t_;
  const std::size_t capacity_;
  const Clock::time_point deadline_;
  Sections sections_;
  std::vector<std::vector<Index>> overlaps_;
  std::vector<std::size_t> total_;      // per section: sizes not yet placed
  std::vector<std::size_t> floor_;      // per section: lowest offset still usable
  std::vector<std::size_t> max_total_;  // per buffer: largest remaining section total
  std::vector<Index> cuts_;             // per boundary: unplaced buffers crossing it
  std::vector<std::size_t> offset_;     // per buffer: kNone while unplaced
  std::vector<std::size_t> min_offset_;
  std::vector<std::size_t> solution_;
  std::vector<Change> offset_changes_;
  std::vector<Change> section_changes_;
  std::vector<Index> witness_;  // per section: a member last seen at or below its floor
  Index affected_lo_ = 0;  // sections whose floor may rise after a placement
  Index affected_hi_ = 0;
  std::deque<std::vector<Candidate>> candidate_pool_;  // by search depth
  std::size_t depth_ = 0;
  std::string_view heuristic_ = kHeuristics[0];
  std::int64_t nodes_remaining_ = 0;
  std::uint64_t nodes_ = 0;
};

}  // namespace

ExactResult SolveExact(const std::vector<PlanTensor>& tensors, std::size_t capacity,
                       std::chrono::steady_clock::time_point deadline) {
  // Zero-size tensors take no space: leave them at offset 0 and search the rest.
  std::vector<PlanTensor> sized;
  std::vector<std::size_t> original;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].size == 0) continue;
    sized.push_back(tensors[i]);
    original.push_back(i);
  }
  ExactResult result = Search(sized, capacity, deadline).Run();
  if (result.status == ExactStatus::kFound) {
    std::vector<std::size_t> offsets(tensors.size(), 0);
    for (std::size_t k = 0; k < original.size(); ++k) offsets[original[k]] = result.offsets[k];
    result.offsets = std::move(offsets);
  }
  return result;
}

}  // namespace memarena::planner
