// realloc-growing buffers: 64 string builders at a time append 1-512 B chunks with realloc
// until each reaches its final size (1 KiB to 1 MiB, log-uniform), then it is freed and a
// new one starts. Rewards in-place growth and punishes copying on every step.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "workload.h"

namespace {

struct Builder {
  char* data = nullptr;
  std::size_t size = 0;
  std::size_t target = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t buffers_total = workload::Scaled(1500, scale);
  constexpr std::size_t kLive = 64;
  workload::Rng rng(7);
  std::vector<Builder> live(kLive);
  std::size_t started = 0;
  std::uint64_t checksum = 0;
  auto restart = [&](Builder& b) {
    if (b.data != nullptr) {
      checksum += static_cast<unsigned char>(b.data[b.size / 2]) + b.size;
      std::free(b.data);
    }
    b = Builder{};
    if (started < buffers_total) {
      b.target = rng.LogUniform(1024, 1 << 20);
      ++started;
    }
  };
  for (Builder& b : live) restart(b);
  bool any = true;
  while (any) {
    any = false;
    for (Builder& b : live) {
      if (b.target == 0) continue;
      any = true;
      const std::size_t chunk = rng.Uniform(1, 512);
      void* grown = std::realloc(b.data, b.size + chunk);
      if (grown == nullptr) {
        std::fprintf(stderr, "realloc failed\n");
        return 1;
      }
      b.data = static_cast<char*>(grown);
      std::memset(b.data + b.size, static_cast<int>(chunk), chunk);
      b.size += chunk;
      if (b.size >= b.target) restart(b);
    }
  }
  std::printf("realloc_grow: %zu buffers, checksum %llu\n", buffers_total,
              static_cast<unsigned long long>(checksum));
  return 0;
}
