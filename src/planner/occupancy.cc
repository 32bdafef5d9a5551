// The time-indexed occupancy tree behind greedy placement (see occupancy.h).
#include "planner/occupancy.h"

#include <algorithm>

#include "planner/sweep.h"

namespace memarena::planner {

namespace {

#if defined(__GNUC__) || defined(__clang__)
#define MEMARENA_PLANNER_PREFETCH(address) __builtin_prefetch(address)
#else
#define MEMARENA_PLANNER_PREFETCH(address) static_cast<void>(address)
#endif

// Sets this small are searched faster from the front than by bisection.
constexpr std::uint32_t kLinearSearchBelow = 8;

// The first of `count` sorted ranges whose end is at least `value` (a scan when short).
std::size_t FirstEndingAtOrAfter(const ByteRange* ranges, std::uint32_t count,
                                 std::size_t value) noexcept {
  if (count < kLinearSearchBelow) {
    std::size_t k = 0;
    while (k < count && ranges[k].end < value) ++k;
    return k;
  }
  return static_cast<std::size_t>(
      std::lower_bound(ranges, ranges + count, value,
                       [](const ByteRange& r, std::size_t v) { return r.end < v; }) -
      ranges);
}

}  // namespace

std::size_t RangePool::Allocate(unsigned size_class) {
  std::vector<std::size_t>& free = free_[size_class];
  if (!free.empty()) {
    const std::size_t at = free.back();
    free.pop_back();
    return at;
  }
  const std::size_t at = ranges_.size();
  ranges_.resize(at + (std::size_t{1} << size_class));
  return at;
}

void RangePool::Clear() noexcept {
  ranges_.clear();
  for (std::vector<std::size_t>& free : free_) free.clear();
}

void ByteRanges::Insert(RangePool& pool, std::size_t begin, std::size_t end) {
  ByteRange* ranges = size_ == 0 ? nullptr : pool.At(start_);
  // The first range ending at or after `begin` is the first that touches or follows it.
  const std::size_t first = FirstEndingAtOrAfter(ranges, size_, begin);
  std::size_t last = first;
  while (last < size_ && ranges[last].begin <= end) {
    begin = std::min(begin, ranges[last].begin);
    end = std::max(end, ranges[last].end);
    ++last;
  }
  if (first != last) {  // merged with [first, last): one range replaces them
    ranges[first] = ByteRange{begin, end};
    std::copy(ranges + last, ranges + size_, ranges + first + 1);
    size_ -= static_cast<std::uint32_t>(last - first - 1);
    return;
  }
  if (size_class_ != kNoBlock && size_ < (std::uint32_t{1} << size_class_)) {
    std::copy_backward(ranges + first, ranges + size_, ranges + size_ + 1);
    ranges[first] = ByteRange{begin, end};
    ++size_;
    return;
  }
  // Full (or no block yet): move to a block twice the size. Allocate may move the pool.
  const unsigned grown_class = size_class_ == kNoBlock ? 1 : size_class_ + 1;
  const std::size_t grown_at = pool.Allocate(grown_class);
  ByteRange* grown = pool.At(grown_at);
  if (size_class_ != kNoBlock) {
    const ByteRange* old = pool.At(start_);
    std::copy(old, old + first, grown);
    std::copy(old + first, old + size_, grown + first + 1);
    pool.Free(start_, size_class_);
  }
  grown[first] = ByteRange{begin, end};
  start_ = grown_at;
  size_class_ = grown_class;
  ++size_;
}

void ByteRanges::Prefetch(const RangePool& pool) const noexcept {
  if (size_ == 0) return;
  // The front (a short set's scan) and the middle (a bisection's first probe).
  const ByteRange* ranges = pool.At(start_);
  MEMARENA_PLANNER_PREFETCH(ranges);
  MEMARENA_PLANNER_PREFETCH(ranges + size_ / 2);
}

std::size_t ByteRanges::FirstFree(const RangePool& pool, std::size_t from, std::size_t size,
                                  std::size_t alignment, std::size_t& cursor) const noexcept {
  if (size_ == 0) return from;
  const ByteRange* ranges = pool.At(start_);
  // Find the first range ending above `from`: the first that could be in the way.
  if (cursor == kNoCursor) {
    cursor = FirstEndingAtOrAfter(ranges, size_, from + 1);
  } else {
    while (cursor < size_ && ranges[cursor].end <= from) ++cursor;
  }
  std::size_t offset = from;
  for (; cursor < size_ && ranges[cursor].begin < offset + size; ++cursor) {
    offset = AlignUp(ranges[cursor].end, alignment);
  }
  return offset;
}

Occupancy::Occupancy(std::size_t num_slots) {
  while (leaves_ < num_slots) leaves_ *= 2;
  nodes_.resize(2 * leaves_);
}

void Occupancy::Clear() {
  for (std::size_t node : used_) {
    nodes_[node].covering.clear();
    nodes_[node].touching.clear();
  }
  used_.clear();
  pool_.Clear();
}

void Occupancy::Decompose(std::uint32_t lo, std::uint32_t hi) {
  inside_.clear();
  partial_.clear();
  // A perfect tree over leaves_ leaves: node k has children 2k and 2k + 1, leaf s is node
  // leaves_ + s. The canonical cover of [lo, hi), bottom up:
  for (std::size_t l = lo + leaves_, r = hi + leaves_; l < r; l >>= 1, r >>= 1) {
    if ((l & 1) != 0) inside_.push_back(l++);
    if ((r & 1) != 0) inside_.push_back(--r);
  }
  // The nodes it partly overlaps are the ancestors of its first and last slot whose slots
  // reach outside it (a leaf never does).
  for (unsigned level = 1; (std::size_t{1} << level) <= leaves_; ++level) {
    const std::size_t width = std::size_t{1} << level;
    const std::size_t first_begin = std::size_t{lo} >> level << level;
    const std::size_t last_begin = (std::size_t{hi} - 1) >> level << level;
    if (first_begin < lo || first_begin + width > hi) {
      partial_.push_back((lo + leaves_) >> level);
    }
    if (last_begin != first_begin && last_begin + width > hi) {
      partial_.push_back((hi - 1 + leaves_) >> level);
    }
  }
  // The node indices depend on [lo, hi) only, not on what is stored: ask for all of them
  // at once, so their cache misses overlap instead of following each other down the tree.
  for (std::size_t node : inside_) MEMARENA_PLANNER_PREFETCH(&nodes_[node]);
  for (std::size_t node : partial_) MEMARENA_PLANNER_PREFETCH(&nodes_[node]);
}

void Occupancy::Insert(std::uint32_t lo, std::uint32_t hi, std::size_t begin, std::size_t end) {
  Decompose(lo, hi);
  // Partial nodes gain it in `touching`, nodes inside [lo, hi) in both sets.
  for (std::size_t node : partial_) nodes_[node].touching.Prefetch(pool_);
  for (std::size_t node : inside_) {
    nodes_[node].touching.Prefetch(pool_);
    nodes_[node].covering.Prefetch(pool_);
  }
  for (std::size_t node : partial_) {
    Node& n = nodes_[node];
    if (n.touching.empty() && n.covering.empty()) used_.push_back(node);
    n.touching.Insert(pool_, begin, end);
  }
  for (std::size_t node : inside_) {
    Node& n = nodes_[node];
    if (n.touching.empty() && n.covering.empty()) used_.push_back(node);
    n.touching.Insert(pool_, begin, end);
    n.covering.Insert(pool_, begin, end);
  }
}

std::size_t Occupancy::LowestFit(std::uint32_t lo, std::uint32_t hi, std::size_t size,
                                 std::size_t alignment) {
  // The placed tensors overlapping [lo, hi): `touching` of the nodes inside it and
  // `covering` of the nodes it only partly overlaps.
  Decompose(lo, hi);
  relevant_.clear();
  for (std::size_t node : inside_) {
    if (!nodes_[node].touching.empty()) relevant_.push_back(&nodes_[node].touching);
  }
  for (std::size_t node : partial_) {
    if (!nodes_[node].covering.empty()) relevant_.push_back(&nodes_[node].covering);
  }
  for (const ByteRanges* set : relevant_) set->Prefetch(pool_);
  // Densest sets first: they decide most of the climb, the sparse ones mostly confirm.
  std::sort(relevant_.begin(), relevant_.end(),
            [](const ByteRanges* a, const ByteRanges* b) { return a->count() > b->count(); });
  // Each set lifts the candidate to its own lowest free place at or above it; after a
  // sparse set lifts it, the dense ones are asked again first (they block most often, so
  // the sparse ones are asked once things settle). Done when all leave it where it was.
  // The candidate only rises, so each set's walk resumes where it stopped.
  const std::size_t count = relevant_.size();
  cursors_.assign(count, ByteRanges::kNoCursor);
  std::size_t offset = 0;
  for (std::size_t k = 0; k < count;) {
    const std::size_t free = relevant_[k]->FirstFree(pool_, offset, size, alignment, cursors_[k]);
    if (free != offset && k != 0) {
      offset = free;
      k = 0;
      continue;
    }
    offset = free;
    ++k;
  }
  return offset;
}

std::size_t Occupancy::StoredRanges() const noexcept {
  std::size_t total = 0;
  for (std::size_t node : used_) {
    total += nodes_[node].covering.count() + nodes_[node].touching.count();
  }
  return total;
}

}  // namespace memarena::planner
