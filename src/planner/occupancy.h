// Which bytes are taken over which times: a segment tree over time whose nodes hold merged
// byte ranges, so the lowest free offset for a lifetime is found without pairwise overlap
// lists (O(log n) nodes per query instead of every overlapping tensor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memarena::planner {

// A set of bytes as sorted, disjoint, non-touching [begin, end) ranges. Touching ranges
// merge, so a stack of tensors with no gap between them costs one entry.
class ByteRanges {
 public:
  void Insert(std::size_t begin, std::size_t end);
  // The lowest multiple of `alignment` at or above `from` (itself such a multiple) where
  // [offset, offset + size) meets no range. `cursor` is where the walk starts: kNoCursor
  // for a binary search; a later call with a larger `from` may pass the value this one left
  // there, and then only walks forward (what LowestFit's rounds do).
  static constexpr std::size_t kNoCursor = static_cast<std::size_t>(-1);
  std::size_t FirstFree(std::size_t from, std::size_t size, std::size_t alignment,
                        std::size_t& cursor) const noexcept;
  bool empty() const noexcept { return ranges_.empty(); }
  void clear() noexcept { ranges_.clear(); }
  std::size_t count() const noexcept { return ranges_.size(); }

 private:
  struct Range {
    std::size_t begin;
    std::size_t end;
  };
  std::vector<Range> ranges_;
};

// Occupied bytes over time slots [0, num_slots). A tensor occupies bytes over a contiguous
// slot range; two tensors conflict when their slot ranges and byte ranges both intersect.
// Each node keeps `covering` (tensors whose slots contain the node's whole range) and
// `touching` (every tensor whose slots intersect the node's range). A query for slots
// [lo, hi) needs `touching` of the O(log n) nodes inside it and `covering` of the
// O(log n) nodes that it only partly overlaps: together exactly the tensors it overlaps.
class Occupancy {
 public:
  explicit Occupancy(std::size_t num_slots);

  void Clear();
  // Marks bytes [begin, end) taken over slots [lo, hi). lo < hi <= num_slots, begin < end.
  void Insert(std::uint32_t lo, std::uint32_t hi, std::size_t begin, std::size_t end);
  // The lowest multiple of `alignment` (a power of two) at which `size` > 0 bytes are free
  // over slots [lo, hi): the textbook greedy's "lowest offset among overlapping tensors".
  std::size_t LowestFit(std::uint32_t lo, std::uint32_t hi, std::size_t size,
                        std::size_t alignment);
  // Stored ranges over all nodes (for memory accounting in tests and benchmarks).
  std::size_t StoredRanges() const noexcept;

 private:
  struct Node {
    ByteRanges covering;
    ByteRanges touching;
  };
  void InsertAt(std::size_t node, std::uint32_t node_lo, std::uint32_t node_hi,
                std::uint32_t lo, std::uint32_t hi, std::size_t begin, std::size_t end);
  void Collect(std::size_t node, std::uint32_t node_lo, std::uint32_t node_hi,
               std::uint32_t lo, std::uint32_t hi);

  std::uint32_t num_slots_;
  std::vector<Node> nodes_;
  std::vector<std::size_t> used_;            // nodes written since the last Clear
  std::vector<const ByteRanges*> relevant_;  // scratch for LowestFit
  std::vector<std::size_t> cursors_;         // scratch for LowestFit, one per relevant set
};

}  // namespace memarena::planner
