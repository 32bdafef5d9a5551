// The library's own threads block every signal: StartHelperThread's thread starts with all
// of them blocked and leaves the caller's mask as it was, and the growth monitor's thread
// does not take a process-directed signal that the program's thread blocks (the kernel
// hands such a signal to any thread that does not block it).
#include "common/helper_thread.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "memarena/observability.h"

namespace memarena::common {
namespace {

sigset_t CallingThreadMask() {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return mask;
}

TEST(HelperThread, StartsWithEverySignalBlockedAndLeavesTheCallersMask) {
  const sigset_t before = CallingThreadMask();
  ASSERT_FALSE(sigismember(&before, SIGUSR1)) << "the test runs with SIGUSR1 unblocked";
  sigset_t seen;
  sigemptyset(&seen);
  std::thread helper = StartHelperThread([&seen] { seen = CallingThreadMask(); });
  helper.join();
  for (const int signal : {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM, SIGPIPE}) {
    EXPECT_TRUE(sigismember(&seen, signal)) << "signal " << signal << " is not blocked";
  }
  const sigset_t after = CallingThreadMask();
  EXPECT_EQ(sigismember(&after, SIGUSR1), 0);
  EXPECT_EQ(sigismember(&after, SIGTERM), sigismember(&before, SIGTERM));
}

std::atomic<int> g_handled{0};
void CountSignal(int) { g_handled.fetch_add(1); }

// CPython's test_pthread_sigmask: block SIGUSR1, send it to the process, expect it pending
// until unblocked. The monitor thread used to take it.
TEST(HelperThread, TheMonitorLeavesASignalTheProgramBlocksPending) {
  struct sigaction action = {};
  action.sa_handler = &CountSignal;
  struct sigaction old_action = {};
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old_action), 0);
  StartMonitor(std::chrono::milliseconds(1));  // with this thread's mask: SIGUSR1 open
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &usr1, nullptr), 0);
  const std::uint64_t sample = LastGrowthVerdict().sample_number;
  ASSERT_EQ(kill(getpid(), SIGUSR1), 0);
  // The monitor samples (and could take the signal) a few times meanwhile.
  while (LastGrowthVerdict().sample_number < sample + 5) std::this_thread::yield();
  EXPECT_EQ(g_handled.load(), 0) << "another thread took the signal";
  sigset_t pending;
  sigpending(&pending);
  EXPECT_TRUE(sigismember(&pending, SIGUSR1));
  ASSERT_EQ(pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr), 0);  // delivered here, now
  EXPECT_EQ(g_handled.load(), 1);
  StopMonitor();
  sigaction(SIGUSR1, &old_action, nullptr);
}

}  // namespace
}  // namespace memarena::common
