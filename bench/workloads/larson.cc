// Larson-like server simulation: each lane owns a table of live blocks and replaces random
// ones (free + malloc of 16 B to 1 KiB). Every generation the table is handed to a new
// thread, as a server hands a connection's state to the next worker, so most frees happen
// on a thread other than the one that allocated, and threads come and go all the time.
// Built twice: larson (malloc/free, random sizes) and larson_fixed (MEMARENA_LARSON_FIXED_SIZE:
// every block the same size, through operator new and the sized operator delete, as a
// server's fixed-size request objects are).
#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include "workload.h"

namespace {

constexpr int kLanes = 2;
constexpr std::size_t kSlots = 2000;
constexpr std::size_t kOpsPerGeneration = 10000;

// A line of its own: the two lanes' checksums, written at every operation, shared one, and
// that line's misses were over half the program's time under every allocator.
struct alignas(64) Lane {
  std::vector<void*> slots = std::vector<void*>(kSlots, nullptr);
  std::uint64_t checksum = 0;
};

#ifdef MEMARENA_LARSON_FIXED_SIZE
constexpr std::size_t kFixedSize = MEMARENA_LARSON_FIXED_SIZE;
constexpr const char* kName = "larson_fixed";
void* NewBlock(workload::Rng&, std::size_t& size) {
  size = kFixedSize;
  return ::operator new(kFixedSize);
}
void DeleteBlock(void* p) {
  if (p != nullptr) ::operator delete(p, kFixedSize);
}
#else
void* NewBlock(workload::Rng& rng, std::size_t& size) {
  size = rng.Uniform(16, 1024);
  return std::malloc(size);
}
void DeleteBlock(void* p) { std::free(p); }
constexpr const char* kName = "larson";
#endif

void RunGeneration(Lane& lane, std::uint64_t seed, std::size_t ops) {
  workload::Rng rng(seed);
  for (std::size_t i = 0; i < ops; ++i) {
    void*& slot = lane.slots[rng.Next() % kSlots];
    DeleteBlock(slot);
    std::size_t size = 0;
    slot = NewBlock(rng, size);
    lane.checksum += workload::Touch(slot, size, static_cast<unsigned char>(i));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t generations = workload::Scaled(600, scale);
  std::vector<Lane> lanes(kLanes);
  std::vector<std::thread> drivers;
  for (int l = 0; l < kLanes; ++l) {
    drivers.emplace_back([&lanes, l, generations] {
      for (std::size_t g = 0; g < generations; ++g) {
        std::thread worker(RunGeneration, std::ref(lanes[l]), g * kLanes + l + 1,
                           kOpsPerGeneration);
        worker.join();
      }
    });
  }
  for (std::thread& t : drivers) t.join();
  std::uint64_t checksum = 0;
  for (Lane& lane : lanes) {
    for (void* p : lane.slots) DeleteBlock(p);
    checksum += lane.checksum;
  }
  std::printf("%s: %zu ops, checksum %llu\n", kName, generations * kOpsPerGeneration * kLanes,
              static_cast<unsigned long long>(checksum));
  return 0;
}
