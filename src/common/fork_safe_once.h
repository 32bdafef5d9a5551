// ForkSafeOnce: runs an initializer once per process, where a function-local static's guard
// (and std::call_once) would not. A child forked while another thread of its parent was
// inside the initializer inherits the guard as taken, and its first call then waits forever
// for a thread the child does not have. Here the state word names the process whose thread
// runs the initializer: a caller that finds it running in another process (the parent,
// before the fork) runs it again itself. So the initializer must tolerate running over a
// first run that stopped anywhere (HostAllocator()'s builds the allocator object again,
// whose one counter is still 0 then, and applies MEMARENA_CONF again).
#pragma once

#include <atomic>
#include <cstdint>

#include "platform/os.h"

namespace memarena::common {

class ForkSafeOnce {
 public:
  constexpr ForkSafeOnce() noexcept = default;
  ForkSafeOnce(const ForkSafeOnce&) = delete;
  ForkSafeOnce& operator=(const ForkSafeOnce&) = delete;

  // Runs `init` unless a call in this process completed it. Threads of this process that
  // call while another runs it wait (yielding) until it is done. An exception from `init`
  // leaves it to the next call, as a static's initializer would.
  template <typename Init>
  void Run(Init&& init) {
    if (state_.load(std::memory_order_acquire) == kDone) [[likely]] return;
    const auto self = static_cast<std::int64_t>(platform::ProcessId());
    for (;;) {
      std::int64_t seen = state_.load(std::memory_order_acquire);
      if (seen == kDone) return;
      if (seen == self) {  // another thread of this process is inside `init`
        platform::YieldCpu();
        continue;
      }
      // Nobody started, or a thread of another process did (this one forked from it).
      if (!state_.compare_exchange_weak(seen, self, std::memory_order_acquire)) continue;
      try {
        init();
      } catch (...) {
        state_.store(kNotStarted, std::memory_order_release);
        throw;
      }
      state_.store(kDone, std::memory_order_release);
      return;
    }
  }

  bool Done() const noexcept { return state_.load(std::memory_order_acquire) == kDone; }

 private:
  // State: kNotStarted, kDone, or the id (> 0) of the process whose thread runs `init`.
  static constexpr std::int64_t kNotStarted = 0;
  static constexpr std::int64_t kDone = -1;
  std::atomic<std::int64_t> state_{kNotStarted};
};

}  // namespace memarena::common
