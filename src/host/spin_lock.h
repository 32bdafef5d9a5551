// SpinLock: the host heap's lock. Constant-initialized and allocation-free, so the heap
// works from a process's first malloc; fork handlers can take and drop it like a mutex.
#pragma once

#include <atomic>

#include "common/scoped_lock.h"
#include "platform/cpu.h"
#include "platform/os.h"

namespace memarena::host {

// A heap lock that one thread holds while another forks stays held in the child, which then
// waits for it forever. The heap's fork handlers (heap.cc) take every heap lock before fork()
// and drop them after, so they are registered before any heap lock is first taken, by
// whichever path takes it: a process whose threads only allocate large blocks builds no
// thread cache, and when the handlers waited for the first cache its forked children hung
// (31 of 40 in HostForkDeathTest.TheChildCanAllocateWhenNoThreadEverBuiltACache).
// 0: not registered, 1: being registered, 2: registered. Hidden, as the rest of the heap's
// state is internal: a library that links the heap beside a program that links it too
// (libmemarena_cuda.so in the tests) keeps a heap of its own, whose locks must register its
// own handlers, not bind to the program's copy (ASAN reported that as an ODR violation).
__attribute__((visibility("hidden"))) extern std::atomic<int> g_fork_handlers_state;
__attribute__((visibility("hidden"))) void RegisterForkHandlersSlow() noexcept;  // heap.cc
inline void RegisterForkHandlersOnce() noexcept {
  if (g_fork_handlers_state.load(std::memory_order_acquire) == 2) [[likely]] return;
  RegisterForkHandlersSlow();
}

class MEMARENA_CAPABILITY("spin lock") SpinLock {
 public:
  constexpr SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  void lock() noexcept MEMARENA_ACQUIRE() {
    RegisterForkHandlersOnce();
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    LockSlow();
  }
  bool try_lock() noexcept MEMARENA_TRY_ACQUIRE(true) {
    RegisterForkHandlersOnce();
    return !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept MEMARENA_RELEASE() { locked_.store(false, std::memory_order_release); }

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
        platform::CpuRelax();
      } else {
        platform::YieldCpu();
      }
    }
  }

  std::atomic<bool> locked_{false};
};

// Scoped holder: the annotated ScopedLock, so the analysis sees what each scope holds.
using SpinLockHolder = common::ScopedLock<SpinLock>;

}  // namespace memarena::host
