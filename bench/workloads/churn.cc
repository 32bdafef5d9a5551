// Small-object churn: one thread allocates batches of 16-256 B objects with new[] and
// malloc, keeps them briefly, and frees them in a shuffled order: the pattern of parsers,
// containers and string-heavy code.
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "workload.h"

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t rounds = workload::Scaled(20000, scale);
  constexpr std::size_t kBatch = 500;
  workload::Rng rng(42);
  std::vector<std::pair<void*, bool>> batch(kBatch);
  std::uint64_t checksum = 0;
  for (std::size_t r = 0; r < rounds; ++r) {
    for (auto& [ptr, is_new] : batch) {
      const std::size_t size = rng.LogUniform(16, 256);
      is_new = (rng.Next() & 1) != 0;
      ptr = is_new ? static_cast<void*>(new char[size]) : std::malloc(size);
      checksum += workload::Touch(ptr, size, static_cast<unsigned char>(r));
    }
    for (std::size_t i = kBatch - 1; i > 0; --i) std::swap(batch[i], batch[rng.Next() % (i + 1)]);
    for (auto& [ptr, is_new] : batch) {
      if (is_new) {
        delete[] static_cast<char*>(ptr);
      } else {
        std::free(ptr);
      }
    }
  }
  std::printf("churn: %zu objects, checksum %llu\n", rounds * kBatch,
              static_cast<unsigned long long>(checksum));
  return 0;
}
