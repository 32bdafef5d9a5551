// Cache false sharing: 2 threads each allocate small objects (8-64 B) and write them many
// times. An allocator that hands two threads objects on the same cache line makes every
// write bounce the line between cores; one that serves each thread from its own spans does
// not. Blocks are freed and reallocated between rounds, on the thread that uses them.
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "workload.h"

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t rounds = workload::Scaled(100000, scale);
  constexpr int kThreads = 2;
  constexpr std::size_t kObjects = 64;
  constexpr int kWrites = 200;
  std::vector<std::uint64_t> checksums(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&checksums, t, rounds] {
      workload::Rng rng(static_cast<std::uint64_t>(t) + 7);
      std::vector<volatile unsigned char*> objects(kObjects);
      for (std::size_t r = 0; r < rounds; ++r) {
        for (auto& object : objects) {
          object = static_cast<volatile unsigned char*>(std::malloc(rng.Uniform(8, 64)));
          object[0] = 0;  // malloc's bytes are unspecified: count from zero under every allocator
        }
        for (int w = 0; w < kWrites; ++w) {
          for (auto* object : objects) object[0] = static_cast<unsigned char>(object[0] + 1);
        }
        for (auto* object : objects) {
          checksums[t] += object[0];
          std::free(const_cast<unsigned char*>(object));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::printf("false_sharing: %zu rounds, checksum %llu\n", rounds,
              static_cast<unsigned long long>(checksums[0] + checksums[1]));
  return 0;
}
