// BookkeepingAdaptor: the record of live blocks and the counters that LimitingAllocator and
// StatisticsAllocator keep over their upstream, and the limit check between them.
#include <new>
#include <unordered_map>

#include "common/mutex.h"
#include "common/usage_counters.h"
#include "memarena/adaptors.h"

namespace memarena {
namespace {

// The last request the limit refused on this thread, for DescribeFailure.
struct LimitRefusal {
  const void* adaptor = nullptr;
  std::size_t bytes = 0;
};
thread_local LimitRefusal t_refusal;

}  // namespace

struct BookkeepingAdaptor::Ledger {
  struct Block {
    std::size_t usable;
    std::size_t requested;
  };

  // True when `extra` more held bytes stay within the limit.
  bool Fits(std::size_t extra) const noexcept MEMARENA_REQUIRES(mutex) {
    return limit == 0 || (extra <= limit && counters.bytes_held + pending <= limit - extra);
  }

  // Reserves room for a request before the upstream call, so two threads cannot both pass
  // the check with the room for one. False when the limit refuses it.
  bool Admit(std::size_t bytes) noexcept {
    common::MutexLock lock(mutex);
    if (!Fits(bytes)) {
      counters.OnFailure();
      return false;
    }
    pending += bytes;
    return true;
  }

  // The upstream failed (`counted`: it returned nullptr, so the failure is this adaptor's too;
  // a std::bad_alloc on its way to the base is counted there).
  void Abandon(std::size_t bytes, bool counted) noexcept {
    common::MutexLock lock(mutex);
    pending -= bytes;
    if (counted) counters.OnFailure();
  }

  // Records the block the upstream gave. False when its usable size crosses the limit (the
  // caller gives it back); throws std::bad_alloc when the record cannot grow.
  bool Commit(void* ptr, std::size_t usable, std::size_t bytes) {
    common::MutexLock lock(mutex);
    pending -= bytes;
    if (!Fits(usable)) {
      counters.OnFailure();
      return false;
    }
    blocks.emplace(ptr, Block{usable, bytes});
    counters.OnHold(usable);
    counters.OnAllocate(usable, bytes);
    return true;
  }

  // Forgets a live block; false when `ptr` is not one.
  bool Remove(void* ptr) noexcept {
    common::MutexLock lock(mutex);
    auto it = blocks.find(ptr);
    if (it == blocks.end()) return false;
    counters.OnUnhold(it->second.usable);
    counters.OnFree(it->second.usable, it->second.requested);
    blocks.erase(it);
    return true;
  }

  Block Find(const void* ptr) const noexcept {
    common::MutexLock lock(mutex);
    auto it = blocks.find(ptr);
    return it == blocks.end() ? Block{0, 0} : it->second;
  }

  std::size_t limit = 0;
  mutable common::Mutex mutex;
  std::unordered_map<const void*, Block> blocks MEMARENA_GUARDED_BY(mutex);
  // Admitted requests still in the upstream call.
  std::size_t pending MEMARENA_GUARDED_BY(mutex) = 0;
  common::UsageCounters counters MEMARENA_GUARDED_BY(mutex);
};

BookkeepingAdaptor::BookkeepingAdaptor(Allocator& upstream, std::size_t limit_bytes,
                                       std::string_view kind_name)
    : UpstreamAdaptor(upstream, kind_name), ledger_(std::make_unique<Ledger>()) {
  ledger_->limit = limit_bytes;
}

BookkeepingAdaptor::~BookkeepingAdaptor() = default;

void* BookkeepingAdaptor::DoAllocate(std::size_t bytes, std::size_t alignment,
                                     StreamHandle stream) {
  Ledger& ledger = *ledger_;
  if (!ledger.Admit(bytes)) {
    t_refusal = {this, bytes};
    return nullptr;
  }
  void* ptr = nullptr;
  try {
    ptr = AllocateIn(upstream(), bytes, alignment, stream);
  } catch (...) {
    ledger.Abandon(bytes, /*counted=*/false);
    throw;
  }
  if (ptr == nullptr) {
    ledger.Abandon(bytes, /*counted=*/true);
    return nullptr;
  }
  bool kept = false;
  try {
    kept = ledger.Commit(ptr, upstream().UsableSize(ptr), bytes);
  } catch (...) {
    DeallocateIn(upstream(), ptr, kNoStream);
    throw;
  }
  if (!kept) {
    DeallocateIn(upstream(), ptr, kNoStream);
    t_refusal = {this, bytes};
    return nullptr;
  }
  return ptr;
}

FreeResult BookkeepingAdaptor::DoDeallocate(void* ptr, StreamHandle stream) noexcept {
  if (!ledger_->Remove(ptr)) return FreeResult::kNotOwned;
  return DeallocateIn(upstream(), ptr, stream);
}

std::size_t BookkeepingAdaptor::DoUsableSize(const void* ptr) const noexcept {
  return ledger_->Find(ptr).usable;
}

std::size_t BookkeepingAdaptor::RequestedBytes(const void* ptr) const noexcept {
  return ptr == nullptr ? 0 : ledger_->Find(ptr).requested;
}

AllocatorStats BookkeepingAdaptor::DoGetStats() const {
  const std::size_t limit =
      ledger_->limit != 0 ? ledger_->limit : upstream().GetStats().limit_bytes;
  common::MutexLock lock(ledger_->mutex);
  AllocatorStats stats = ledger_->counters;
  stats.limit_bytes = limit;
  return stats;
}

void BookkeepingAdaptor::ResetPeakStats() {
  common::MutexLock lock(ledger_->mutex);
  ledger_->counters.ResetPeaks();
}

bool BookkeepingAdaptor::RefusedByLimit(std::size_t bytes) const noexcept {
  return t_refusal.adaptor == this && t_refusal.bytes == bytes;
}

std::size_t BookkeepingAdaptor::limit_bytes() const noexcept { return ledger_->limit; }

}  // namespace memarena
