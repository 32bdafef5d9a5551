// Host allocator against glibc malloc, tcmalloc and mimalloc (peer_allocators.h) in the
// same binary: malloc/free pairs by size, batches of allocations then frees, the random-slot
// replacement of glibc's malloc benchmark, and a 2-thread producer/consumer with cross-thread
// frees. Run with --benchmark_repetitions=5
// --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "host/host_api.h"
#include "memarena/memarena.h"
#include "peer_allocators.h"

namespace {

using memarena::bench::Mimalloc;
using memarena::bench::Tcmalloc;

// A peer that could not be loaded skips its benchmarks with the reason.
template <typename A>
bool Unavailable(benchmark::State& state) {
  if constexpr (requires { A::Unavailable(); }) {
    if (!A::Unavailable().empty()) {
      state.SkipWithError(A::Unavailable().c_str());
      return true;
    }
  }
  return false;
}

struct Glibc {
  static void* Allocate(std::size_t n) { return std::malloc(n); }
  static void Free(void* p) { std::free(p); }
};

struct Host {
  static void* Allocate(std::size_t n) { return memarena::host::Allocate(n, 0); }
  static void Free(void* p) { memarena::host::Free(p); }
};

// The host heap's fast paths without the double/interior-free checks: what the checks cost
// is BM_Pair<Host> against BM_Pair<HostUnchecked> in the same run (issue 17).
struct HostUnchecked {
  static void* Allocate(std::size_t n) { return memarena::host::AllocateUnchecked(n, 0); }
  static void Free(void* p) { memarena::host::FreeUnchecked(p); }
};

// Through the public interface: a virtual call on memarena::HostAllocator().
struct HostInterface {
  static void* Allocate(std::size_t n) { return memarena::HostAllocator().TryAllocate(n); }
  static void Free(void* p) { memarena::HostAllocator().Deallocate(p); }
};

template <typename A>
void BM_Pair(benchmark::State& state) {
  if (Unavailable<A>(state)) return;
  const auto size = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* p = A::Allocate(size);
    benchmark::DoNotOptimize(p);
    A::Free(p);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

void PairSizes(benchmark::internal::Benchmark* b) {
  for (long size : {16, 32, 64, 128, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576}) {
    b->Arg(size);
  }
}

BENCHMARK_TEMPLATE(BM_Pair, Glibc)->Apply(PairSizes);
BENCHMARK_TEMPLATE(BM_Pair, Host)->Apply(PairSizes);
BENCHMARK_TEMPLATE(BM_Pair, HostUnchecked)->Apply(PairSizes);
BENCHMARK_TEMPLATE(BM_Pair, Tcmalloc)->Apply(PairSizes);
BENCHMARK_TEMPLATE(BM_Pair, Mimalloc)->Apply(PairSizes);
BENCHMARK_TEMPLATE(BM_Pair, HostInterface)->Arg(64);

// Allocate `count` blocks of `size`, then free them all; time per block.
template <typename A>
void BM_Batch(benchmark::State& state) {
  if (Unavailable<A>(state)) return;
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto count = static_cast<std::size_t>(state.range(1));
  std::vector<void*> blocks(count);
  for (auto _ : state) {
    for (std::size_t i = 0; i < count; ++i) blocks[i] = A::Allocate(size);
    benchmark::DoNotOptimize(blocks.data());
    for (std::size_t i = 0; i < count; ++i) A::Free(blocks[i]);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(count));
}

void BatchShapes(benchmark::internal::Benchmark* b) {
  for (long size : {16, 64, 256, 4096}) {
    for (long count : {100, 10000}) b->Args({size, count});
  }
}

BENCHMARK_TEMPLATE(BM_Batch, Glibc)->Apply(BatchShapes);
BENCHMARK_TEMPLATE(BM_Batch, Host)->Apply(BatchShapes);
BENCHMARK_TEMPLATE(BM_Batch, HostUnchecked)->Apply(BatchShapes);
BENCHMARK_TEMPLATE(BM_Batch, Tcmalloc)->Apply(BatchShapes);
BENCHMARK_TEMPLATE(BM_Batch, Mimalloc)->Apply(BatchShapes);

// The shape of glibc's malloc micro-benchmark (bench/workloads/random_slots.cc, in one
// process): 1,024 slots hold blocks of log-uniform random size from 16 B to range(0); each
// step frees a random slot and refills it with a block of a new size. The slots and sizes
// are drawn before the timed loop (the same 64 Ki steps for every allocator), so the loop is
// the allocator's. Time per free + malloc.
struct RandomStep {
  std::uint32_t slot;
  std::uint32_t size;
};

std::vector<RandomStep> RandomSteps(std::size_t max_size) {
  constexpr std::size_t kSteps = 1 << 16;
  std::mt19937_64 rng(1729);
  const int max_bits = std::bit_width(max_size) - 1;
  std::vector<RandomStep> steps(kSteps);
  for (RandomStep& step : steps) {
    const std::size_t base = std::size_t{1} << (4 + rng() % static_cast<unsigned>(max_bits - 3));
    step.slot = static_cast<std::uint32_t>(rng() % 1024);
    step.size = static_cast<std::uint32_t>(std::min(max_size, base + rng() % base));
  }
  return steps;
}

template <typename A>
void BM_RandomSlots(benchmark::State& state) {
  if (Unavailable<A>(state)) return;
  const std::vector<RandomStep> steps = RandomSteps(static_cast<std::size_t>(state.range(0)));
  std::vector<void*> slots(1024);
  for (void*& slot : slots) slot = A::Allocate(16);
  std::size_t next = 0;
  for (auto _ : state) {
    const RandomStep step = steps[next++ % steps.size()];
    A::Free(slots[step.slot]);
    auto* block = static_cast<unsigned char*>(A::Allocate(step.size));
    block[0] = static_cast<unsigned char>(next);  // a caller writes what it allocates
    slots[step.slot] = block;
  }
  for (void* slot : slots) A::Free(slot);
  state.SetItemsProcessed(state.iterations());
}

void RandomSlotSizes(benchmark::internal::Benchmark* b) { b->Arg(1024)->Arg(32768); }

BENCHMARK_TEMPLATE(BM_RandomSlots, Glibc)->Apply(RandomSlotSizes);
BENCHMARK_TEMPLATE(BM_RandomSlots, Host)->Apply(RandomSlotSizes);
BENCHMARK_TEMPLATE(BM_RandomSlots, Tcmalloc)->Apply(RandomSlotSizes);
BENCHMARK_TEMPLATE(BM_RandomSlots, Mimalloc)->Apply(RandomSlotSizes);

// Single-producer single-consumer ring of pointers, published a whole iteration (64
// blocks) at a time so the harness costs one synchronisation per 64 blocks and the
// figure is dominated by the allocator: thread 0 allocates, thread 1 frees.
constexpr std::size_t kPerIteration = 64;

class Ring {
 public:
  static constexpr std::size_t kCapacity = std::size_t{1} << 14;
  void PushBatch(void* const* blocks) {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    while (tail + kPerIteration - head_.load(std::memory_order_acquire) > kCapacity) {
    }
    for (std::size_t i = 0; i < kPerIteration; ++i) slots_[(tail + i) % kCapacity] = blocks[i];
    tail_.store(tail + kPerIteration, std::memory_order_release);
  }
  void PopBatch(void** blocks) {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    while (tail_.load(std::memory_order_acquire) - head < kPerIteration) {
    }
    for (std::size_t i = 0; i < kPerIteration; ++i) blocks[i] = slots_[(head + i) % kCapacity];
    head_.store(head + kPerIteration, std::memory_order_release);
  }

 private:
  alignas(64) std::atomic<std::size_t> head_{0};
  alignas(64) std::atomic<std::size_t> tail_{0};
  void* slots_[kCapacity] = {};
};

Ring g_ring;

template <typename A>
void BM_ProducerConsumer(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  void* blocks[kPerIteration];
  if (state.thread_index() == 0) {
    for (auto _ : state) {
      for (void*& p : blocks) p = A::Allocate(size);
      benchmark::DoNotOptimize(blocks);
      g_ring.PushBatch(blocks);
    }
  } else {
    for (auto _ : state) {
      g_ring.PopBatch(blocks);
      for (void* p : blocks) A::Free(p);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kPerIteration));
}

BENCHMARK_TEMPLATE(BM_ProducerConsumer, Glibc)->Arg(64)->Arg(1024)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_ProducerConsumer, Host)->Arg(64)->Arg(1024)->Threads(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
