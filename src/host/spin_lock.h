// SpinLock: the host heap's lock. Constant-initialized and allocation-free, so the heap
// works from a process's first malloc; fork handlers can take and drop it like a mutex.
#pragma once

#include <atomic>
#include <thread>

namespace memarena::host {

class SpinLock {
 public:
  constexpr SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    LockSlow();
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  void LockSlow() noexcept {
    // Spin briefly on a plain load (no cache-line ping-pong), then yield: critical
    // sections are short, but a holder may be descheduled on a 2-core machine.
    for (unsigned spins = 0;; ++spins) {
      if (!locked_.load(std::memory_order_relaxed) &&
          !locked_.exchange(true, std::memory_order_acquire)) {
        return;
      }
      if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else {
        std::this_thread::yield();
      }
    }
  }

  std::atomic<bool> locked_{false};
};

// Scoped holder (std::lock_guard works too; this one is constexpr-free and tiny).
class SpinLockHolder {
 public:
  explicit SpinLockHolder(SpinLock& lock) noexcept : lock_(lock) { lock_.lock(); }
  ~SpinLockHolder() { lock_.unlock(); }
  SpinLockHolder(const SpinLockHolder&) = delete;
  SpinLockHolder& operator=(const SpinLockHolder&) = delete;

 private:
  SpinLock& lock_;
};

}  // namespace memarena::host
