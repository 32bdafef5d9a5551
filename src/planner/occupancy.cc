// The time-indexed occupancy tree behind greedy placement (see occupancy.h).
#include "planner/occupancy.h"

#include <algorithm>

#include "planner/sweep.h"

namespace memarena::planner {

void ByteRanges::Insert(std::size_t begin, std::size_t end) {
  // The first range ending at or after `begin` is the first that touches or follows it.
  auto first = std::lower_bound(ranges_.begin(), ranges_.end(), begin,
                                [](const Range& r, std::size_t value) { return r.end < value; });
  auto last = first;
  while (last != ranges_.end() && last->begin <= end) {
    begin = std::min(begin, last->begin);
    end = std::max(end, last->end);
    ++last;
  }
  if (first == last) {
    ranges_.insert(first, Range{begin, end});
    return;
  }
  *first = Range{begin, end};
  ranges_.erase(first + 1, last);
}

std::size_t ByteRanges::FirstFree(std::size_t from, std::size_t size, std::size_t alignment,
                                  std::size_t& cursor) const noexcept {
  // Find the first range ending above `from`: the first that could be in the way.
  if (cursor == kNoCursor) {
    cursor = static_cast<std::size_t>(
        std::upper_bound(ranges_.begin(), ranges_.end(), from,
                         [](std::size_t value, const Range& r) { return value < r.end; }) -
        ranges_.begin());
  } else {
    while (cursor < ranges_.size() && ranges_[cursor].end <= from) ++cursor;
  }
  std::size_t offset = from;
  for (; cursor < ranges_.size() && ranges_[cursor].begin < offset + size; ++cursor) {
    offset = AlignUp(ranges_[cursor].end, alignment);
  }
  return offset;
}

Occupancy::Occupancy(std::size_t num_slots)
    : num_slots_(static_cast<std::uint32_t>(num_slots)) {
  std::size_t leaves = 1;
  while (leaves < num_slots) leaves *= 2;
  nodes_.resize(2 * leaves);
}

void Occupancy::Clear() {
  for (std::size_t node : used_) {
    nodes_[node].covering.clear();
    nodes_[node].touching.clear();
  }
  used_.clear();
}

void Occupancy::Insert(std::uint32_t lo, std::uint32_t hi, std::size_t begin, std::size_t end) {
  InsertAt(1, 0, num_slots_, lo, hi, begin, end);
}

void Occupancy::InsertAt(std::size_t node, std::uint32_t node_lo, std::uint32_t node_hi,
                         std::uint32_t lo, std::uint32_t hi, std::size_t begin,
                         std::size_t end) {
  Node& n = nodes_[node];
  if (n.touching.empty() && n.covering.empty()) used_.push_back(node);
  n.touching.Insert(begin, end);
  if (lo <= node_lo && node_hi <= hi) {
    n.covering.Insert(begin, end);
    return;
  }
  const std::uint32_t mid = node_lo + (node_hi - node_lo) / 2;
  if (lo < mid) InsertAt(2 * node, node_lo, mid, lo, hi, begin, end);
  if (mid < hi) InsertAt(2 * node + 1, mid, node_hi, lo, hi, begin, end);
}

void Occupancy::Collect(std::size_t node, std::uint32_t node_lo, std::uint32_t node_hi,
                        std::uint32_t lo, std::uint32_t hi) {
  const Node& n = nodes_[node];
  if (n.touching.empty()) return;  // nothing placed anywhere below
  if (lo <= node_lo && node_hi <= hi) {
    relevant_.push_back(&n.touching);
    return;
  }
  if (!n.covering.empty()) relevant_.push_back(&n.covering);
  const std::uint32_t mid = node_lo + (node_hi - node_lo) / 2;
  if (lo < mid) Collect(2 * node, node_lo, mid, lo, hi);
  if (mid < hi) Collect(2 * node + 1, mid, node_hi, lo, hi);
}

std::size_t Occupancy::LowestFit(std::uint32_t lo, std::uint32_t hi, std::size_t size,
                                 std::size_t alignment) {
  relevant_.clear();
  Collect(1, 0, num_slots_, lo, hi);
  // Densest sets first: they decide most of the climb, the sparse ones mostly confirm.
  std::sort(relevant_.begin(), relevant_.end(),
            [](const ByteRanges* a, const ByteRanges* b) { return a->count() > b->count(); });
  // Go round the sets, each lifting the candidate to its own lowest free place at or above
  // it. Done when every set in a row has left the candidate where it was.
  // The candidate only rises, so each set's walk resumes where it stopped.
  const std::size_t count = relevant_.size();
  cursors_.assign(count, ByteRanges::kNoCursor);
  std::size_t offset = 0;
  std::size_t clean = 0;  // consecutive sets that found `offset` free
  for (std::size_t k = 0; clean < count; k = k + 1 == count ? 0 : k + 1) {
    const std::size_t free = relevant_[k]->FirstFree(offset, size, alignment, cursors_[k]);
    clean = free == offset ? clean + 1 : 1;
    offset = free;
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
