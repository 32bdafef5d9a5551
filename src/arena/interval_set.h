// IntervalSet: disjoint, coalesced [begin, end) address ranges, for the committed granules
// of a virtual-memory source and the decommitted holes of an expandable arena.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>

namespace memarena::arena {

class IntervalSet {
 public:
  // Adds [begin, end), merging with touching or overlapping ranges.
  void Add(std::uintptr_t begin, std::uintptr_t end) {
    if (begin >= end) return;
    bytes_ += (end - begin) - BytesInside(begin, end);
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second >= begin) {
      --it;
      begin = it->first;
    }
    while (it != ranges_.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(begin, end);
  }

  // Removes [begin, end) from whatever ranges it overlaps.
  void Remove(std::uintptr_t begin, std::uintptr_t end) {
    if (begin >= end) return;
    bytes_ -= BytesInside(begin, end);
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin()) --it;
    while (it != ranges_.end() && it->first < end) {
      const std::uintptr_t b = it->first, e = it->second;
      if (e <= begin) {
        ++it;
        continue;
      }
      it = ranges_.erase(it);
      if (b < begin) ranges_.emplace(b, begin);
      if (e > end) ranges_.emplace(end, e);
    }
  }

  // Calls fn(b, e) for each part of [begin, end) inside the set, in address order.
  template <typename Fn>
  void ForEachInside(std::uintptr_t begin, std::uintptr_t end, Fn&& fn) const {
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin()) --it;
    for (; it != ranges_.end() && it->first < end; ++it) {
      const std::uintptr_t b = std::max(begin, it->first), e = std::min(end, it->second);
      if (b < e) fn(b, e);
    }
  }

  // Calls fn(b, e) for each part of [begin, end) outside the set, in address order.
  template <typename Fn>
  void ForEachOutside(std::uintptr_t begin, std::uintptr_t end, Fn&& fn) const {
    std::uintptr_t cursor = begin;
    ForEachInside(begin, end, [&](std::uintptr_t b, std::uintptr_t e) {
      if (cursor < b) fn(cursor, b);
      cursor = e;
    });
    if (cursor < end) fn(cursor, end);
  }

  // Bytes of [begin, end) inside the set.
  std::size_t BytesInside(std::uintptr_t begin, std::uintptr_t end) const {
    std::size_t n = 0;
    ForEachInside(begin, end, [&n](std::uintptr_t b, std::uintptr_t e) { n += e - b; });
    return n;
  }

  bool Covers(std::uintptr_t begin, std::uintptr_t end) const {
    return BytesInside(begin, end) == end - begin;
  }

  std::size_t bytes() const noexcept { return bytes_; }
  bool empty() const noexcept { return ranges_.empty(); }

 private:
  std::map<std::uintptr_t, std::uintptr_t> ranges_;  // begin -> end
  std::size_t bytes_ = 0;
};

}  // namespace memarena::arena
