// Large-buffer replacement: 20 live buffers, each step replaces a random one by a new
// zero-filled buffer of 5-25 MiB (std::make_unique<char[]>, which writes every byte). The
// pattern of image and tensor pipelines; it measures the large-block path: a lock or a
// syscall per allocation, and page faults when freed pages are not reused.
#include <cstdio>
#include <memory>

#include "workload.h"

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t steps = workload::Scaled(2000, scale);
  constexpr std::size_t kBuffers = 20;
  constexpr std::size_t kMinBytes = std::size_t{5} << 20;
  constexpr std::size_t kMaxBytes = std::size_t{25} << 20;
  workload::Rng rng(42);
  std::unique_ptr<char[]> buffers[kBuffers];
  std::uint64_t checksum = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    const std::size_t index = rng.Next() % kBuffers;
    const std::size_t size = rng.Uniform(kMinBytes, kMaxBytes);
    buffers[index] = std::make_unique<char[]>(size);  // value-initialized: zero-filled
    buffers[index][size / 2] = static_cast<char>(s);
    checksum += static_cast<unsigned char>(buffers[index][size - 1]) + size;
  }
  std::printf("large_buffers: %zu buffers, checksum %llu\n", steps,
              static_cast<unsigned long long>(checksum));
  return 0;
}
