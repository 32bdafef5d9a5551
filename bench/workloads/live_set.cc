// A memory-allocation test with a bounded live set, on MEMARENA_WORKLOAD_THREADS threads
// (built twice: live_set_1t and live_set_2t). Each thread keeps its own live set of mixed
// sizes (mostly 8 B - 1 KiB, some up to 64 KiB) under a byte budget: the emptier the live
// set, the likelier the next step allocates; at the budget it only frees. So the live set
// settles around half the budget (4 MiB) and wanders around it, with every block's lifetime
// random. Blocks are written in full when allocated and read when freed; no frees cross
// threads.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "workload.h"

#ifndef MEMARENA_WORKLOAD_THREADS
#define MEMARENA_WORKLOAD_THREADS 1
#endif

namespace {

constexpr std::size_t kBudgetBytes = 8 << 20;  // per thread

struct Block {
  unsigned char* bytes;
  std::size_t size;
};

std::size_t BlockSize(workload::Rng& rng) {
  return rng.Next() % 16 == 0 ? rng.LogUniform(1024, 64 << 10) : rng.LogUniform(8, 1024);
}

std::uint64_t Run(std::uint64_t seed, std::size_t operations) {
  workload::Rng rng(seed);
  std::vector<Block> live;
  std::size_t live_bytes = 0;
  std::uint64_t checksum = 0;
  for (std::size_t i = 0; i < operations; ++i) {
    // Allocate with probability 1 - live/budget, else free a random block.
    const bool allocate =
        live.empty() || (live_bytes < kBudgetBytes && rng.Next() % kBudgetBytes >= live_bytes);
    if (allocate) {
      const std::size_t size = BlockSize(rng);
      auto* bytes = static_cast<unsigned char*>(std::malloc(size));
      std::memset(bytes, static_cast<int>(i & 0xff), size);
      live.push_back({bytes, size});
      live_bytes += size;
    } else {
      const std::size_t victim = rng.Next() % live.size();
      const Block block = live[victim];
      checksum += block.bytes[0] + block.bytes[block.size / 2] + block.size;
      std::free(block.bytes);
      live_bytes -= block.size;
      live[victim] = live.back();
      live.pop_back();
    }
  }
  for (const Block& block : live) std::free(block.bytes);
  return checksum;
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  constexpr int kThreads = MEMARENA_WORKLOAD_THREADS;
  const std::size_t operations = workload::Scaled(10000000, scale);
  const std::uint64_t checksum = workload::SumOverThreads(kThreads, [operations](int t) {
    return Run(static_cast<std::uint64_t>(t) + 11, operations);
  });
  std::printf("live_set: %d threads x %zu operations, checksum %llu\n", kThreads, operations,
              static_cast<unsigned long long>(checksum));
  return 0;
}
