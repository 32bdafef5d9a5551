// ScopedLock: the one RAII holder for every annotated lock (common::Mutex, host::SpinLock),
// so the thread-safety analysis sees what each scope holds.
#pragma once

#include "common/thread_annotations.h"

namespace memarena::common {

// Holds `lock` from construction to the end of the scope.
template <typename Lock>
class MEMARENA_SCOPED_CAPABILITY ScopedLock {
 public:
  explicit ScopedLock(Lock& lock) noexcept(noexcept(lock.lock())) MEMARENA_ACQUIRE(lock)
      : lock_(lock) {
    lock_.lock();
  }
  ~ScopedLock() MEMARENA_RELEASE() { lock_.unlock(); }
  ScopedLock(const ScopedLock&) = delete;
  ScopedLock& operator=(const ScopedLock&) = delete;

 private:
  Lock& lock_;
};

}  // namespace memarena::common
