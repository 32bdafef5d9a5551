// Run under LD_PRELOAD with the monitor every millisecond, a heap profile, a Prometheus file
// and a stats file: holds 32 MiB, then forks 100 workers that free it and exit normally (so
// the drop-in's exit handlers run in each). Prints its pid; exits 1 when a worker has not
// ended within a second (it is killed), or when the stats file named by argv[1] exists
// before the parent's own exit (a worker wrote it).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  std::vector<void*> held;
  for (int i = 0; i < 32; ++i) {
    held.push_back(std::malloc(1 << 20));
    std::memset(held.back(), 1, 1 << 20);
  }
  int hung = 0;
  for (int worker = 0; worker < 100; ++worker) {
    const pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      for (void* block : held) std::free(block);
      std::exit(0);
    }
    bool ended = false;
    for (int wait_ms = 0; wait_ms < 1000 && !ended; wait_ms += 2) {
      ended = waitpid(pid, nullptr, WNOHANG) == pid;
      if (!ended) usleep(2000);
    }
    if (!ended) {
      ++hung;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  const bool stats_written = argc > 1 && access(argv[1], F_OK) == 0;
  std::printf("parent %d, %d of 100 workers hung at exit%s\n", static_cast<int>(getpid()), hung,
              stats_written ? ", and a worker wrote the parent's stats file" : "");
  return hung == 0 && !stats_written ? 0 : 1;
}
