// Run under LD_PRELOAD=libmemarena_malloc.so with one scenario as argv[1]: the misuse of
// issue 17 (double free, interior free, foreign free, malloc_usable_size of an interior
// pointer) and the absurd requests (malloc(1 TiB), aligned_alloc(2^37, 10)) that must
// fail or succeed at once inside the ceiling. Prints what it saw; the test reads it.
#include <dlfcn.h>
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "memarena/c_api.h"

namespace {

// Results go through a volatile so the compiler cannot elide the allocations it sees freed.
void* volatile g_sink = nullptr;

double NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

long ResidentKiB() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long size = 0;
  long resident = 0;
  const int got = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (dlsym(RTLD_DEFAULT, "memarena_ceiling") == nullptr) {
    std::printf("misuse-probe: FAILED: memarena is not preloaded\n");
    return 1;
  }
  const char* scenario = argc > 1 ? argv[1] : "";
  if (std::strcmp(scenario, "double-free") == 0) {
    void* p = std::malloc(64);
    g_sink = p;
    std::free(p);
    std::free(p);
    void* a = std::malloc(64);
    void* b = std::malloc(64);
    g_sink = a;
    g_sink = b;
    std::printf("after: %s\n", a == b ? "same block twice" : "distinct blocks");
    return 0;
  }
  if (std::strcmp(scenario, "interior-free") == 0) {
    auto* q = static_cast<char*>(std::malloc(64));
    g_sink = q;
    std::free(q + 16);
    void* next = std::malloc(64);
    g_sink = next;
    std::printf("after: %s\n", next == q + 16 ? "inside a live block" : "a fresh block");
    return 0;
  }
  if (std::strcmp(scenario, "foreign-free") == 0) {
    static int in_data = 0;
    int on_stack = 0;
    std::free(&in_data);
    std::free(&on_stack);
    std::printf("after: carried on\n");
    return 0;
  }
  if (std::strcmp(scenario, "usable-size") == 0) {
    auto* p = static_cast<char*>(std::malloc(64));
    g_sink = p;
    std::printf("usable: %zu %zu\n", malloc_usable_size(p), malloc_usable_size(p + 8));
    return 0;
  }
  if (std::strcmp(scenario, "huge") == 0) {
    const long rss0 = ResidentKiB();
    const double t0 = NowMs();
    errno = 0;
    void* tib = std::malloc(std::size_t{1} << 40);
    const int tib_errno = errno;
    const double t1 = NowMs();
    void* aligned = aligned_alloc(std::size_t{1} << 37, 10);
    const double t2 = NowMs();
    const long rss1 = ResidentKiB();
    memarena_stats stats{};
    auto get_stats =
        reinterpret_cast<int (*)(memarena_stats*)>(dlsym(RTLD_DEFAULT, "memarena_get_stats"));
    if (get_stats == nullptr || get_stats(&stats) != 0) return 1;
    std::printf("malloc(1<<40): %s errno=%d in %.3f ms\n", tib ? "block" : "NULL", tib_errno,
                t1 - t0);
    std::printf("aligned_alloc(1<<37, 10): %s in %.3f ms\n", aligned ? "block" : "NULL",
                t2 - t1);
    std::printf("aligned: %d\n",
                aligned != nullptr &&
                    reinterpret_cast<std::uintptr_t>(aligned) % (std::uintptr_t{1} << 37) == 0);
    std::printf("rss growth: %ld KiB\n", rss1 - rss0);
    std::printf("held: %zu ceiling: %zu\n", stats.bytes_held, stats.limit_bytes);
    std::free(tib);
    std::free(aligned);
    return 0;
  }
  std::printf("misuse-probe: FAILED: unknown scenario '%s'\n", scenario);
  return 2;
}
