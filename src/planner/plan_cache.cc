// The plan cache: exact shape-signature keys (no hashing, so no collisions) and LRU
// eviction, unlike ONNX Runtime's XOR-of-dims key that is never evicted.
#include <fmt/format.h>

#include <stdexcept>

#include "memarena/planner.h"

namespace memarena {

PlanCache::PlanCache(std::size_t capacity) : capacity_(capacity) {
  if (capacity == 0) {
    throw std::invalid_argument("memarena PlanCache: capacity must be at least 1 pattern");
  }
}

std::shared_ptr<const MemoryPattern> PlanCache::Find(const ShapeSignature& shapes) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(shapes);
  if (it == entries_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru_position);
  return it->second.pattern;
}

void PlanCache::Insert(const ShapeSignature& shapes,
                       std::shared_ptr<const MemoryPattern> pattern) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(shapes);
  if (it != entries_.end()) {
    it->second.pattern = std::move(pattern);
    lru_.splice(lru_.begin(), lru_, it->second.lru_position);
    return;
  }
  if (entries_.size() == capacity_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
    ++evictions_;
  }
  lru_.push_front(shapes);
  entries_.emplace(shapes, Entry{std::move(pattern), lru_.begin()});
}

std::size_t PlanCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::uint64_t PlanCache::evictions() const {
  std::lock_guard lock(mutex_);
  return evictions_;
}

}  // namespace memarena
