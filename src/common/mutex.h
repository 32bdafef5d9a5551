// Mutex: std::mutex with thread-safety annotations, so the analysis knows what it guards;
// MutexLock holds one for a scope.
#pragma once

#include <condition_variable>
#include <mutex>

#include "common/scoped_lock.h"
#include "common/thread_annotations.h"

namespace memarena::common {

class MEMARENA_CAPABILITY("mutex") Mutex {
 public:
  constexpr Mutex() = default;  // constant-initialized, like std::mutex
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() MEMARENA_ACQUIRE() { mutex_.lock(); }
  void unlock() MEMARENA_RELEASE() { mutex_.unlock(); }
  bool try_lock() MEMARENA_TRY_ACQUIRE(true) { return mutex_.try_lock(); }

  // Waits on `cv` (used only with this mutex): drops the lock while asleep and takes it
  // again before returning. Wakes may be spurious, so callers loop on their condition
  // (written in the caller, not in a lambda, so the analysis sees it read under the lock).
  void Wait(std::condition_variable_any& cv) MEMARENA_REQUIRES(this) { cv.wait(mutex_); }
  // The same, giving up after `timeout`; false when it timed out.
  template <typename Duration>
  bool WaitFor(std::condition_variable_any& cv, Duration timeout) MEMARENA_REQUIRES(this) {
    return cv.wait_for(mutex_, timeout) == std::cv_status::no_timeout;
  }

 private:
  std::mutex mutex_;
};

using MutexLock = ScopedLock<Mutex>;

}  // namespace memarena::common
