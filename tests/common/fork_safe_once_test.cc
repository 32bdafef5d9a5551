// ForkSafeOnce: one run per process, waiters in the same process wait, an exception leaves
// the work to the next call, and a child forked while its parent's thread was inside the
// initializer runs it itself instead of waiting forever (a function-local static's guard
// hangs there).
#include "common/fork_safe_once.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <stdexcept>
#include <thread>
#include <vector>

namespace memarena::common {
namespace {

TEST(ForkSafeOnce, RacingCallersRunTheInitializerOnceAndReturnAfterIt) {
  ForkSafeOnce once;
  std::atomic<int> runs{0};
  std::atomic<int> returned_before_done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      once.Run([&] {
        runs.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      });
      if (!once.Done()) returned_before_done.fetch_add(1);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(returned_before_done.load(), 0);
}

TEST(ForkSafeOnce, AnInitializerThatThrowsLeavesTheWorkToTheNextCall) {
  ForkSafeOnce once;
  EXPECT_THROW(once.Run([] { throw std::runtime_error("refused"); }), std::runtime_error);
  EXPECT_FALSE(once.Done());
  int runs = 0;
  once.Run([&] { ++runs; });
  once.Run([&] { ++runs; });
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(once.Done());
}

// The shape of the hang: a thread of the parent is inside the initializer when another
// thread forks. The child's first call must run the initializer itself.
TEST(ForkSafeOnce, AChildForkedDuringTheInitializerRunsItItself) {
  ForkSafeOnce once;
  std::atomic<bool> inside{false};
  std::atomic<bool> release{false};
  std::thread builder([&] {
    once.Run([&] {
      inside.store(true);
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  });
  while (!inside.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const pid_t pid = fork();
  ASSERT_NE(pid, -1);
  if (pid == 0) {
    alarm(10);  // a child that waits for the parent's builder is killed, and fails below
    bool ran = false;
    once.Run([&] { ran = true; });
    _exit(ran && once.Done() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  release.store(true);
  builder.join();
  EXPECT_TRUE(once.Done());
  ASSERT_FALSE(WIFSIGNALED(status)) << "the child hung: killed by signal " << WTERMSIG(status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
}  // namespace memarena::common
