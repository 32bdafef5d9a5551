// CacheBudgetPool: the process-wide pool of thread-cache bytes (HostConfig::
// thread_cache_bytes) that every thread's cache budget is claimed from and returned to.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memarena::host {

// Lock-free: a claim is one compare-and-swap on the unclaimed bytes. Unclaimed may go
// negative for a while when the total is lowered below what live threads hold; claims then
// get nothing until enough is returned.
class CacheBudgetPool {
 public:
  constexpr explicit CacheBudgetPool(std::size_t total) noexcept
      : total_(total), unclaimed_(static_cast<std::int64_t>(total)) {}

  // Takes up to `want` bytes; returns what it took (0 when the pool is empty).
  std::size_t Claim(std::size_t want) noexcept {
    std::int64_t unclaimed = unclaimed_.load(std::memory_order_relaxed);
    while (unclaimed > 0) {
      const std::int64_t take = std::min(unclaimed, static_cast<std::int64_t>(want));
      if (unclaimed_.compare_exchange_weak(unclaimed, unclaimed - take,
                                           std::memory_order_relaxed)) {
        return static_cast<std::size_t>(take);
      }
    }
    return 0;
  }

  void Return(std::size_t bytes) noexcept {
    if (bytes != 0) unclaimed_.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
  }

  // A new total: what live threads claimed stays claimed, the unclaimed part moves by the
  // difference.
  void SetTotal(std::size_t total) noexcept {
    const std::size_t old = total_.exchange(total, std::memory_order_relaxed);
    unclaimed_.fetch_add(static_cast<std::int64_t>(total) - static_cast<std::int64_t>(old),
                         std::memory_order_relaxed);
  }

  std::size_t Total() const noexcept { return total_.load(std::memory_order_relaxed); }
  std::int64_t Unclaimed() const noexcept { return unclaimed_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::size_t> total_;
  std::atomic<std::int64_t> unclaimed_;
};

}  // namespace memarena::host
