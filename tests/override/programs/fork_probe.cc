// fork in a program whose other threads keep allocating: "exec" forks and execs a shell
// (which then runs on the same preloaded allocator); "allocate" forks children that
// allocate right away. A child stuck on an allocator lock held at fork time times out.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};

void Churn(int seed) {
  std::vector<void*> live(128, nullptr);
  for (std::size_t i = 0; !g_stop.load(std::memory_order_relaxed); ++i) {
    void*& slot = live[i % live.size()];
    std::free(slot);
    slot = std::malloc((i * 131 + static_cast<std::size_t>(seed)) % (i % 64 == 0 ? 300000 : 3000));
  }
  for (void* p : live) std::free(p);
}

// Exit status of `pid`, or -1 when it did not finish within 20 s.
int Wait(pid_t pid) {
  for (int i = 0; i < 2000; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

int ChildAllocates() {
  std::vector<std::string> strings;
  for (int i = 0; i < 2000; ++i) strings.push_back(std::string(static_cast<std::size_t>(i % 300), 'x'));
  char* copy = strdup("child");
  void* big = std::malloc(1 << 20);
  const bool ok = copy != nullptr && big != nullptr && strings.back().size() == 1999 % 300;
  std::free(big);
  std::free(copy);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "exec" && mode != "allocate") {
    std::fprintf(stderr, "usage: %s exec|allocate\n", argv[0]);
    return 2;
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back(Churn, t);
  const int rounds = mode == "exec" ? 3 : 12;
  int ok = 0;
  for (int r = 0; r < rounds; ++r) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      if (mode == "exec") {
        execlp("sh", "sh", "-c", "echo exec-child: $(echo 6 7 | awk '{print $1*$2}')", nullptr);
        _exit(127);
      }
      _exit(ChildAllocates());
    }
    if (Wait(pid) == 0) ++ok;
  }
  g_stop = true;
  for (std::thread& t : threads) t.join();
  std::printf("fork-%s: %d of %d children ok\n", mode.c_str(), ok, rounds);
  return ok == rounds ? 0 : 1;
}
