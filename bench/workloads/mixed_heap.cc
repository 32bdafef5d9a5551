// A mixed-size heap with long- and short-lived blocks: each of two threads keeps a table of
// long-lived blocks (16 B - 64 KiB, a few up to 2 MiB) that it slowly replaces, while most
// allocations are short-lived (freed 64 allocations later). Fragmentation builds up the way
// it does in a long-running service.
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "workload.h"

namespace {

std::uint64_t Run(std::uint64_t seed, std::size_t steps) {
  constexpr std::size_t kLongLived = 8000;
  constexpr std::size_t kShortWindow = 64;
  workload::Rng rng(seed);
  std::uint64_t checksum = 0;
  auto long_size = [&rng] {
    return rng.Next() % 400 == 0 ? rng.LogUniform(256 << 10, 2 << 20) : rng.LogUniform(16, 64 << 10);
  };
  std::vector<void*> table(kLongLived);
  for (void*& p : table) {
    const std::size_t size = long_size();
    p = std::malloc(size);
    checksum += workload::Touch(p, size, 1);
  }
  std::vector<void*> window(kShortWindow, nullptr);
  for (std::size_t i = 0; i < steps; ++i) {
    void*& slot = window[i % kShortWindow];
    std::free(slot);
    const std::size_t size = rng.LogUniform(16, 4096);
    slot = std::malloc(size);
    checksum += workload::Touch(slot, size, static_cast<unsigned char>(i));
    if (i % 16 == 0) {
      void*& old = table[rng.Next() % kLongLived];
      std::free(old);
      const std::size_t fresh = long_size();
      old = std::malloc(fresh);
      checksum += workload::Touch(old, fresh, 2);
    }
  }
  for (void* p : window) std::free(p);
  for (void* p : table) std::free(p);
  return checksum;
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t steps = workload::Scaled(2000000, scale);
  std::uint64_t sums[2] = {};
  std::thread a([&] { sums[0] = Run(1, steps); });
  std::thread b([&] { sums[1] = Run(2, steps); });
  a.join();
  b.join();
  std::printf("mixed_heap: %zu steps, checksum %llu\n", 2 * steps,
              static_cast<unsigned long long>(sums[0] + sums[1]));
  return 0;
}
