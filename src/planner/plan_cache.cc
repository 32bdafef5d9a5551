// The plan cache: exact shape-signature keys (no hashing, so no collisions) and LRU
// eviction, unlike ONNX Runtime's XOR-of-dims key that is never evicted.
#include <fmt/format.h>

#include <list>
#include <map>
#include <stdexcept>

#include "common/mutex.h"
#include "memarena/planner.h"

namespace memarena {

struct PlanCache::Impl {
  using Lru = std::list<ShapeSignature>;
  struct Entry {
    std::shared_ptr<const MemoryPattern> pattern;
    Lru::iterator lru_position;
  };
  mutable common::Mutex mutex;
  std::map<ShapeSignature, Entry> entries MEMARENA_GUARDED_BY(mutex);
  Lru lru MEMARENA_GUARDED_BY(mutex);  // front = most recently used
  std::uint64_t evictions MEMARENA_GUARDED_BY(mutex) = 0;
};

PlanCache::PlanCache(std::size_t capacity) : capacity_(capacity) {
  if (capacity == 0) {
    throw std::invalid_argument("memarena PlanCache: capacity must be at least 1 pattern");
  }
  impl_ = std::make_unique<Impl>();
}

PlanCache::~PlanCache() = default;

std::shared_ptr<const MemoryPattern> PlanCache::Find(const ShapeSignature& shapes) {
  common::MutexLock lock(impl_->mutex);
  auto it = impl_->entries.find(shapes);
  if (it == impl_->entries.end()) return nullptr;
  impl_->lru.splice(impl_->lru.begin(), impl_->lru, it->second.lru_position);
  return it->second.pattern;
}

void PlanCache::Insert(const ShapeSignature& shapes,
                       std::shared_ptr<const MemoryPattern> pattern) {
  common::MutexLock lock(impl_->mutex);
  auto it = impl_->entries.find(shapes);
  if (it != impl_->entries.end()) {
    it->second.pattern = std::move(pattern);
    impl_->lru.splice(impl_->lru.begin(), impl_->lru, it->second.lru_position);
    return;
  }
  if (impl_->entries.size() == capacity_) {
    impl_->entries.erase(impl_->lru.back());
    impl_->lru.pop_back();
    ++impl_->evictions;
  }
  impl_->lru.push_front(shapes);
  impl_->entries.emplace(shapes, Impl::Entry{std::move(pattern), impl_->lru.begin()});
}

std::size_t PlanCache::size() const {
  common::MutexLock lock(impl_->mutex);
  return impl_->entries.size();
}

std::uint64_t PlanCache::evictions() const {
  common::MutexLock lock(impl_->mutex);
  return impl_->evictions;
}

}  // namespace memarena
