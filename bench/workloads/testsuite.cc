// The test-suite scenario of issue 2: one process runs 5,000 simulated test cases; each
// allocates about 2 MiB in mixed sizes (16 B - 256 KiB), frees some as it goes, and frees
// the rest when it ends. A few small objects per case outlive it (caches, registries), so
// long-lived data is interleaved with each case's memory as in a real test binary.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "workload.h"

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t cases = workload::Scaled(5000, scale);
  constexpr std::size_t kCaseBytes = 2 << 20;
  workload::Rng rng(2024);
  std::vector<void*> survivors;
  std::vector<void*> live;
  std::uint64_t checksum = 0;
  for (std::size_t c = 0; c < cases; ++c) {
    std::size_t allocated = 0;
    while (allocated < kCaseBytes) {
      const std::size_t size = rng.LogUniform(16, 256 << 10);
      void* p = std::malloc(size);
      checksum += workload::Touch(p, size, static_cast<unsigned char>(c));
      allocated += size;
      if (rng.Next() % 8 == 0) {
        std::free(p);  // a temporary inside the test body
      } else {
        live.push_back(p);
      }
    }
    for (int k = 0; k < 4; ++k) {
      const std::size_t size = rng.LogUniform(16, 512);
      void* keep = std::malloc(size);
      checksum += workload::Touch(keep, size, 3);
      survivors.push_back(keep);
    }
    for (void* p : live) std::free(p);  // the test's teardown
    live.clear();
  }
  for (void* p : survivors) std::free(p);
  std::printf("testsuite: %zu cases, checksum %llu\n", cases,
              static_cast<unsigned long long>(checksum));
  return 0;
}
