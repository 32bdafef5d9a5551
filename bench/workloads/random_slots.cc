// The shape of glibc's own malloc micro-benchmark, one thread: a fixed working set of slots
// holds blocks of random size (16 B - 32 KiB, weighted towards small sizes as real heaps
// are); every iteration frees a random slot and puts a new block of a new random size in it.
// No phase structure at all: what it measures is the plain free-then-malloc cost across
// size classes with a steady live set (about 3 MiB here).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "workload.h"

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t iterations = workload::Scaled(24000000, scale);
  constexpr std::size_t kSlots = 1024;
  workload::Rng rng(1729);
  std::vector<void*> slots(kSlots, nullptr);
  std::uint64_t checksum = 0;
  for (std::size_t i = 0; i < iterations; ++i) {
    void*& slot = slots[rng.Next() % kSlots];
    std::free(slot);
    const std::size_t size = rng.LogUniform(16, 32 << 10);
    slot = std::malloc(size);
    // One byte at each end, like a caller that fills in a header and a trailer: the
    // benchmark is about the allocator, not about writing the blocks.
    auto* bytes = static_cast<unsigned char*>(slot);
    bytes[0] = static_cast<unsigned char>(i);
    bytes[size - 1] = static_cast<unsigned char>(size);
    checksum += bytes[0] + bytes[size - 1];
  }
  for (void* p : slots) std::free(p);
  std::printf("random_slots: %zu iterations, checksum %llu\n", iterations,
              static_cast<unsigned long long>(checksum));
  return 0;
}
