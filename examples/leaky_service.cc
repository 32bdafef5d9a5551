// docs/observability.md's service recipe: a "service" that answers a request every 20 ms and
// leaks 1 MiB per request from one call site (RememberRequest) among sites that free what
// they take. Plain malloc/new: run it under the drop-in (`memarena run` or LD_PRELOAD) with
// MEMARENA_CONF=monitor_interval:...,heap_profile:...,prometheus_file:...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<void*> g_history;       // the leak: grows forever
std::deque<std::string> g_sessions;  // bounded cache: old entries are dropped

[[gnu::noinline]] void RememberRequest() {
  void* copy = std::malloc(1 << 20);
  std::memset(copy, 0, 1 << 20);
  g_history.push_back(copy);
}

[[gnu::noinline]] void ParseRequest() {
  std::vector<std::string> tokens;
  for (int i = 0; i < 256; ++i) tokens.emplace_back(std::string(2048, 'x'));
}

[[gnu::noinline]] void UpdateSessions() {
  g_sessions.emplace_back(std::string(256 * 1024, 's'));
  if (g_sessions.size() > 16) g_sessions.pop_front();
}

}  // namespace

int main(int argc, char** argv) {
  const int requests = argc > 1 ? std::atoi(argv[1]) : 150;
  for (int i = 0; i < requests; ++i) {
    ParseRequest();
    UpdateSessions();
    RememberRequest();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::printf("served %d requests\n", requests);
  return 0;
}
