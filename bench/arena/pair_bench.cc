// Alloc/free pair cost of BfcArena with 10, 1,000 and 100,000 live chunks on the simulated
// source (no memory is touched, so this is the bookkeeping alone).
// Run: arena_pair_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include "arena/simulated_memory_source.h"
#include "memarena/arena.h"

namespace memarena {
namespace {

struct Op {
  std::size_t slot;
  std::size_t size;
};

// Log-uniform sizes from 256 B to 64 KiB, as activations of small models spread.
std::size_t RandomSize(std::mt19937_64& rng) {
  const unsigned shift = 8 + static_cast<unsigned>(rng() % 9);
  return 1 + rng() % (std::size_t{1} << shift);
}

// An arena with `live` chunks of random sizes allocated.
struct LiveArena {
  explicit LiveArena(std::size_t live) : rng(1), slots(live) {
    for (void*& p : slots) p = arena.Allocate(RandomSize(rng));
  }
  ~LiveArena() {
    for (void* p : slots) arena.Deallocate(p);
  }
  BfcArena arena{std::make_shared<arena::SimulatedMemorySource>()};
  std::mt19937_64 rng;
  std::vector<void*> slots;
};

// Each iteration frees a random live chunk and allocates a new one of a random size.
void BM_AllocFreePairMixedSizes(benchmark::State& state) {
  const auto live = static_cast<std::size_t>(state.range(0));
  LiveArena l(live);
  BfcArena& arena = l.arena;
  std::vector<void*>& slots = l.slots;
  std::mt19937_64& rng = l.rng;
  std::vector<Op> ops(1 << 16);
  for (Op& op : ops) op = {rng() % live, RandomSize(rng)};
  std::size_t i = 0;
  for (auto _ : state) {
    const Op& op = ops[i++ & (ops.size() - 1)];
    arena.Deallocate(slots[op.slot]);
    slots[op.slot] = arena.Allocate(op.size);
    benchmark::DoNotOptimize(slots[op.slot]);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  const AllocatorStats s = arena.GetStats();
  state.counters["held/in_use"] =
      static_cast<double>(s.bytes_held) / static_cast<double>(s.bytes_in_use);
}
BENCHMARK(BM_AllocFreePairMixedSizes)->Arg(10)->Arg(1000)->Arg(100000);

// Allocate then free one 4 KiB chunk while `live` others stay allocated: the best case.
void BM_AllocFreePairSameSize(benchmark::State& state) {
  LiveArena l(static_cast<std::size_t>(state.range(0)));
  BfcArena& arena = l.arena;
  for (auto _ : state) {
    void* p = arena.Allocate(4096);
    benchmark::DoNotOptimize(p);
    arena.Deallocate(p);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_AllocFreePairSameSize)->Arg(10)->Arg(1000)->Arg(100000);

}  // namespace
}  // namespace memarena

BENCHMARK_MAIN();
