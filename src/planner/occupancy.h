// Which bytes are taken over which times: a segment tree over time whose nodes hold merged
// byte ranges, so the lowest free offset for a lifetime is found without pairwise overlap
// lists (O(log n) nodes per query instead of every overlapping tensor).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memarena::planner {

struct ByteRange {
  std::size_t begin;
  std::size_t end;
};

// Storage for every node's ranges: blocks of 2^k ranges cut from one array, with a free
// list per block size. The tree holds millions of small sets; one heap allocation each
// cost more than the searches in them, and scattered them over memory.
class RangePool {
 public:
  static constexpr unsigned kMaxClass = 40;
  std::size_t Allocate(unsigned size_class);  // the index of a block of 2^size_class ranges
  void Free(std::size_t at, unsigned size_class) { free_[size_class].push_back(at); }
  ByteRange* At(std::size_t at) noexcept { return ranges_.data() + at; }
  const ByteRange* At(std::size_t at) const noexcept { return ranges_.data() + at; }
  void Clear() noexcept;

 private:
  std::vector<ByteRange> ranges_;
  std::array<std::vector<std::size_t>, kMaxClass> free_;
};

// A set of bytes as sorted, disjoint, non-touching [begin, end) ranges kept in a RangePool.
// Touching ranges merge, so a stack of tensors with no gap between them costs one entry.
class ByteRanges {
 public:
  void Insert(RangePool& pool, std::size_t begin, std::size_t end);
  // The lowest multiple of `alignment` at or above `from` (itself such a multiple) where
  // [offset, offset + size) meets no range. `cursor` is where the walk starts: kNoCursor
  // to search for it; a later call with a larger `from` may pass the value this one left
  // there, and then only walks forward (what LowestFit's rounds do).
  static constexpr std::size_t kNoCursor = static_cast<std::size_t>(-1);
  std::size_t FirstFree(const RangePool& pool, std::size_t from, std::size_t size,
                        std::size_t alignment, std::size_t& cursor) const noexcept;
  // Asks the CPU to start loading the ranges a search would read first.
  void Prefetch(const RangePool& pool) const noexcept;
  bool empty() const noexcept { return size_ == 0; }
  void clear() noexcept { *this = ByteRanges(); }  // the pool is cleared as a whole
  std::size_t count() const noexcept { return size_; }

 private:
  std::size_t start_ = 0;  // block index in the pool, valid when size_class_ != kNoBlock
  std::uint32_t size_ = 0;
  static constexpr std::uint32_t kNoBlock = static_cast<std::uint32_t>(-1);
  std::uint32_t size_class_ = kNoBlock;
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
  // Fills inside_ (nodes whose slots lie inside [lo, hi), the canonical cover) and
  // partial_ (nodes it only partly overlaps), and prefetches them.
  void Decompose(std::uint32_t lo, std::uint32_t hi);

  std::size_t leaves_ = 1;  // slots rounded up to a power of two
  std::vector<Node> nodes_;
  RangePool pool_;
  std::vector<std::size_t> used_;            // nodes written since the last Clear
  std::vector<std::size_t> inside_;          // scratch for Decompose
  std::vector<std::size_t> partial_;
  std::vector<const ByteRanges*> relevant_;  // scratch for LowestFit
  std::vector<std::size_t> cursors_;         // scratch for LowestFit, one per relevant set
};

}  // namespace memarena::planner
