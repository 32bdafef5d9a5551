// A dynamic-shape inference trace (a 6-layer transformer encoder, batch 1-16 and sequence
// 16-512 in power-of-two buckets, 400 runs) on the simulated source. Reports, per arena
// setting, reserved (peak held) / peak in use and / peak requested; 1.00 is perfect.
// Run: arena_trace_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "arena/simulated_memory_source.h"
#include "memarena/arena.h"

namespace memarena {
namespace {

constexpr std::size_t kLayers = 6;
constexpr std::size_t kHidden = 768;
constexpr std::size_t kHeads = 12;
constexpr std::size_t kFloat = 4;
constexpr int kRuns = 400;

std::size_t Bucket(std::size_t seq) {
  std::size_t b = 16;
  while (b < seq) b *= 2;
  return b;
}

// One inference: allocations and frees in the order an executor would issue them.
void RunModel(BfcArena& arena, std::size_t batch, std::size_t seq) {
  const std::size_t tokens = batch * seq;
  const std::size_t row = tokens * kHidden * kFloat;
  const std::size_t scores = batch * kHeads * seq * seq * kFloat;
  void* x = arena.Allocate(row);
  for (std::size_t layer = 0; layer < kLayers; ++layer) {
    void* qkv = arena.Allocate(3 * row);
    void* s = arena.Allocate(scores);
    void* p = arena.Allocate(scores);
    arena.Deallocate(s);
    void* ctx = arena.Allocate(row);
    arena.Deallocate(p);
    arena.Deallocate(qkv);
    void* attn = arena.Allocate(row);
    arena.Deallocate(ctx);
    void* ffn = arena.Allocate(4 * row);
    void* y = arena.Allocate(row);
    arena.Deallocate(ffn);
    arena.Deallocate(attn);
    arena.Deallocate(x);
    x = y;
  }
  void* logits = arena.Allocate(batch * 2 * kFloat);  // a small classifier head
  arena.Deallocate(x);
  arena.Deallocate(logits);
}

struct Setting {
  ArenaExtendStrategy strategy;
  bool contiguous;       // the source hands out adjacent ranges (memarena merges them)
  bool release_between;  // ReleaseUnusedSpans() after every run (memarena; ORT cannot)
  std::size_t max_dead_bytes_per_chunk;
};

void BM_DynamicShapeTrace(benchmark::State& state, Setting setting) {
  AllocatorStats s;
  for (auto _ : state) {
    arena::SimulatedMemorySource::Options options;
    options.contiguous = setting.contiguous;
    ArenaConfig config;
    config.arena_extend_strategy = setting.strategy;
    config.max_dead_bytes_per_chunk = setting.max_dead_bytes_per_chunk;
    BfcArena arena(std::make_shared<arena::SimulatedMemorySource>(options), config);
    std::mt19937_64 rng(2024);
    for (int run = 0; run < kRuns; ++run) {
      const std::size_t batch = 1 + rng() % 16;
      const std::size_t seq = Bucket(16 + rng() % 497);
      RunModel(arena, batch, seq);
      if (setting.release_between) arena.ReleaseUnusedSpans();
    }
    s = arena.GetStats();
  }
  state.counters["reserved/peak_in_use"] =
      static_cast<double>(s.peak_bytes_held) / static_cast<double>(s.peak_bytes_in_use);
  state.counters["reserved/peak_requested"] =
      static_cast<double>(s.peak_bytes_held) / static_cast<double>(s.peak_bytes_requested);
  state.counters["peak_reserved_MiB"] = static_cast<double>(s.peak_bytes_held) / (1 << 20);
  state.counters["peak_in_use_MiB"] = static_cast<double>(s.peak_bytes_in_use) / (1 << 20);
  state.counters["extensions"] = static_cast<double>(s.num_arena_extensions);
}

constexpr auto kPow2 = ArenaExtendStrategy::kNextPowerOfTwo;
constexpr auto kSame = ArenaExtendStrategy::kSameAsRequested;
constexpr std::size_t kDefaultDead = std::size_t{128} << 20;

struct Named {
  const char* name;
  Setting setting;
};

// "ort_*": ORT-exact (separate regions, never merged, never released during a session).
// The rest use memarena's release between runs and merging of contiguous ranges.
constexpr Named kSettings[] = {
    {"ort_next_power_of_two", {kPow2, false, false, kDefaultDead}},
    {"ort_same_as_requested", {kSame, false, false, kDefaultDead}},
    {"ort_next_power_of_two_dead1MiB", {kPow2, false, false, 1 << 20}},
    {"ort_same_as_requested_dead1MiB", {kSame, false, false, 1 << 20}},
    {"next_power_of_two_release", {kPow2, false, true, kDefaultDead}},
    {"same_as_requested_release", {kSame, false, true, kDefaultDead}},
    {"next_power_of_two_merge", {kPow2, true, false, kDefaultDead}},
    {"next_power_of_two_merge_dead1MiB", {kPow2, true, false, 1 << 20}},
    {"same_as_requested_merge", {kSame, true, false, kDefaultDead}},
    {"same_as_requested_merge_dead1MiB", {kSame, true, false, 1 << 20}},
    {"same_as_requested_merge_release", {kSame, true, true, kDefaultDead}},
};

}  // namespace
}  // namespace memarena

int main(int argc, char** argv) {
  for (const memarena::Named& n : memarena::kSettings) {
    benchmark::RegisterBenchmark((std::string("BM_DynamicShapeTrace/") + n.name).c_str(),
                                 memarena::BM_DynamicShapeTrace, n.setting)
        ->Iterations(1);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
