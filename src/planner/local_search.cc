// Orderings plus local search over the placement order (best-fit placement throughout).
#include "planner/local_search.h"

#include <algorithm>
#include <functional>
#include <random>

#include "planner/placer.h"

namespace memarena::planner {
namespace {

using Clock = std::chrono::steady_clock;
using Key = std::function<bool(Index, Index)>;

std::vector<Index> SortedBy(std::size_t n, const Key& less) {
  std::vector<Index> order(n);
  for (Index i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), less);
  return order;
}

// Orderings that win on different shapes of problem (StartingOrder below): most crowded
// instants first, big-and-long first, most contended first, and time order (which
// reproduces a first-fit allocator's run).
// Own size plus the sizes of everything overlapping, for every tensor, from two sorted
// prefix sums: the tensors overlapping [l, u) are those starting before u minus those that
// ended by l (which all started before u too). O(n log n).
std::vector<std::size_t> Contention(const std::vector<PlanTensor>& t) {
  struct Mark {
    std::int64_t time;
    std::size_t size;
  };
  std::vector<Mark> starts;
  std::vector<Mark> ends;
  for (const PlanTensor& x : t) {
    starts.push_back({x.lower, x.size});
    ends.push_back({x.upper, x.size});
  }
  auto by_time = [](const Mark& a, const Mark& b) { return a.time < b.time; };
  std::sort(starts.begin(), starts.end(), by_time);
  std::sort(ends.begin(), ends.end(), by_time);
  // sums[k] = total size of the first k marks.
  auto prefix = [](const std::vector<Mark>& marks) {
    std::vector<std::size_t> sums(marks.size() + 1, 0);
    for (std::size_t k = 0; k < marks.size(); ++k) sums[k + 1] = sums[k] + marks[k].size;
    return sums;
  };
  const std::vector<std::size_t> start_sums = prefix(starts);
  const std::vector<std::size_t> end_sums = prefix(ends);
  std::vector<std::size_t> contention(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto started = std::lower_bound(starts.begin(), starts.end(), Mark{t[i].upper, 0},
                                          by_time) - starts.begin();
    const auto ended = std::upper_bound(ends.begin(), ends.end(), Mark{t[i].lower, 0},
                                        by_time) - ends.begin();
    contention[i] = start_sums[static_cast<std::size_t>(started)] -
                    end_sums[static_cast<std::size_t>(ended)];
  }
  return contention;
}

// For every tensor, the most bytes live at any one time during its lifetime (the lower
// bound of the instant it crosses that is hardest to pack): live bytes per compressed time
// slot, then a range-maximum query per tensor on an iterative segment tree. O(n log n).
std::vector<std::size_t> Pressure(const std::vector<PlanTensor>& t) {
  const std::vector<std::int64_t> times = DistinctTimes(t);
  const std::size_t slots = times.size();
  auto slot = [&](std::int64_t time) { return std::size_t{SlotOf(times, time)}; };
  std::vector<std::size_t> starting(slots, 0);
  std::vector<std::size_t> ending(slots, 0);
  for (const PlanTensor& x : t) {
    starting[slot(x.lower)] += x.size;
    ending[slot(x.upper)] += x.size;
  }
  std::vector<std::size_t> tree(2 * slots, 0);  // leaves at [slots, 2 * slots)
  std::size_t live = 0;
  for (std::size_t k = 0; k < slots; ++k) {
    live = live + starting[k] - ending[k];
    tree[slots + k] = live;
  }
  for (std::size_t k = slots; k-- > 1;) tree[k] = std::max(tree[2 * k], tree[2 * k + 1]);
  std::vector<std::size_t> pressure(t.size(), 0);
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::size_t best = 0;
    for (std::size_t lo = slot(t[i].lower) + slots, hi = slot(t[i].upper) + slots; lo < hi;
         lo /= 2, hi /= 2) {
      if (lo & 1) best = std::max(best, tree[lo++]);
      if (hi & 1) best = std::max(best, tree[--hi]);
    }
    pressure[i] = best;
  }
  return pressure;
}

// The starting orders, built one at a time (each costs a sort of all tensors, so a caller
// near its deadline stops between them): best first on real training graphs.
std::vector<Index> StartingOrder(const std::vector<PlanTensor>& t, std::size_t which) {
  const std::size_t n = t.size();
  auto length = [&](Index i) { return static_cast<double>(LifetimeLength(t[i])); };
  auto area = [&](Index i) { return static_cast<double>(t[i].size) * length(i); };
  switch (which) {
    case 0: {
      // Tensors that cross the most crowded instants first: those live at the peak stack
      // without gaps, and each less crowded stretch is packed before what is around it.
      const std::vector<std::size_t> pressure = Pressure(t);
      return SortedBy(n, [&](Index a, Index b) {
        if (pressure[a] != pressure[b]) return pressure[a] > pressure[b];
        if (t[a].size != t[b].size) return t[a].size > t[b].size;
        return t[a].lower < t[b].lower;
      });
    }
    case 1:
      // Largest first like greedy, but equal sizes in time order rather than longest
      // first: what the textbook greedy with a stable sort does on training graphs (many
      // equal-sized activations), often well below greedy's tie rule.
      return SortedBy(n, [&](Index a, Index b) {
        if (t[a].size != t[b].size) return t[a].size > t[b].size;
        return t[a].lower < t[b].lower;
      });
    case 2:
      return SortedBy(n, [&](Index a, Index b) { return area(a) > area(b); });
    case 3: {
      const std::vector<std::size_t> contention = Contention(t);
      return SortedBy(n, [&](Index a, Index b) {
        if (contention[a] != contention[b]) return contention[a] > contention[b];
        return t[a].size > t[b].size;
      });
    }
    case 4:
      return SortedBy(n, [&](Index a, Index b) {
        if (length(a) != length(b)) return length(a) > length(b);
        return t[a].size > t[b].size;
      });
    default:
      return SortedBy(n, [&](Index a, Index b) {
        if (t[a].lower != t[b].lower) return t[a].lower < t[b].lower;
        return t[a].size > t[b].size;
      });
  }
}
constexpr std::size_t kStartingOrders = 6;

}  // namespace

void ImproveByOrderings(const std::vector<PlanTensor>& tensors, Clock::time_point deadline,
                        std::size_t target, std::uint64_t seed, Plan& best) {
  const std::size_t n = tensors.size();
  if (n < 2 || best.arena_size <= target || Clock::now() >= deadline) return;
  Placer placer(tensors);
  std::vector<Index> current = SizeOrder(tensors);
  // The walk starts from greedy's placement; when `best` is greedy's plan it is that
  // placement already (placing 200,000 tensors again would cost most of a budget).
  std::vector<std::size_t> current_offsets;
  std::size_t current_arena = best.arena_size;
  if (best.method == kGreedyMethod) {
    current_offsets = best.offsets;
  } else {
    current_arena = placer.Place(current, current_offsets, best.arena_size, deadline);
    if (current_arena > best.arena_size) return;  // out of time already
  }
  std::vector<std::size_t> trial_offsets;

  auto adopt = [&](std::size_t arena, const char* method) {
    if (arena < best.arena_size) {
      best = MakePlan(tensors, trial_offsets, best.lower_bound, method);
    }
  };
  for (std::size_t which = 0; which < kStartingOrders; ++which) {
    if (Clock::now() >= deadline) return;  // each ordering costs a sort to build
    std::vector<Index> order = StartingOrder(tensors, which);
    if (Clock::now() >= deadline) return;
    const std::size_t arena = placer.Place(order, trial_offsets, best.arena_size, deadline);
    adopt(arena, "orderings");
    if (arena < current_arena) {
      current = std::move(order);
      current_arena = arena;
      current_offsets = trial_offsets;
    }
    if (best.arena_size <= target) return;
  }

  std::mt19937_64 rng(seed);
  std::vector<Index> critical;
  std::vector<Index> trial;
  std::vector<std::size_t> position(n);
  std::vector<Index> neighbours;
  for (std::uint64_t step = 0; Clock::now() < deadline; ++step) {
    trial = current;
    if (step % 4 != 3) {
      // Move a tensor that touches the top of the arena earlier.
      critical.clear();
      for (Index i = 0; i < n; ++i) {
        if (current_offsets[i] + tensors[i].size == current_arena) critical.push_back(i);
      }
      const Index pick = critical[rng() % critical.size()];
      for (std::size_t k = 0; k < n; ++k) position[trial[k]] = k;
      const std::size_t from = position[pick];
      if (from == 0) continue;
      std::size_t to = rng() % from;
      if (step % 4 != 2) {
        // Usually next to a tensor placed before it that is live at the same time: the
        // top is set by how that crowded stretch of time was packed (one such move takes
        // a real training graph from 0.76 % above the lower bound to 0.38 %).
        const PlanTensor& p = tensors[pick];
        neighbours.clear();
        for (Index j = 0; j < n; ++j) {
          if (position[j] < from && tensors[j].lower < p.upper && p.lower < tensors[j].upper) {
            neighbours.push_back(j);
          }
        }
        if (!neighbours.empty()) to = position[neighbours[rng() % neighbours.size()]];
      }
      if (rng() % 2 == 0) {
        std::swap(trial[from], trial[to]);
      } else {
        std::rotate(trial.begin() + static_cast<std::ptrdiff_t>(to),
                    trial.begin() + static_cast<std::ptrdiff_t>(from),
                    trial.begin() + static_cast<std::ptrdiff_t>(from) + 1);
      }
    } else {
      // A random swap keeps the walk from circling on one plateau.
      const std::size_t a = rng() % n;
      const std::size_t b = rng() % n;
      std::swap(trial[a], trial[b]);
    }
    const std::size_t arena = placer.Place(trial, trial_offsets, current_arena, deadline);
    if (arena > current_arena) continue;
    adopt(arena, "local-search");
    current.swap(trial);
    current_arena = arena;
    current_offsets = trial_offsets;
    if (best.arena_size <= target) return;
  }
}

}  // namespace memarena::planner
