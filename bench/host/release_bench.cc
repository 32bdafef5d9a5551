// What memarena::ReleaseUnusedSpans() costs, for the suites that call it after every test:
// with nothing to release; per released MiB beside a bare madvise loop over the same pages;
// and over 6,000 simulated test cases under a ceiling near their peak, without release,
// releasing everything, and releasing while a warm working set is kept (release_keep).
// Run: build/bench/host/release_bench --benchmark_repetitions=5
//        --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstddef>
#include <vector>

#include "memarena/memarena.h"
#include "platform/os.h"
#include "../workloads/workload.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kBlockBytes = 256 << 10;  // the blocks freed before each timed release

// Nothing releasable: every call after the first walks the caches and free lists only.
void BM_ReleaseNothing(benchmark::State& state) {
  memarena::ReleaseUnusedSpans();
  std::size_t released = 0;
  for (auto _ : state) released += memarena::ReleaseUnusedSpans();
  state.counters["released_B"] = static_cast<double>(released);
}
BENCHMARK(BM_ReleaseNothing);

void Touch(void* block, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; i += 4096) static_cast<volatile char*>(block)[i] = 1;
}

// Frees range(0) MiB of touched 256 KiB blocks untimed, then times the release.
void BM_ReleasePerMiB(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) * kMiB;
  memarena::SetReleaseKeep(0);
  memarena::ReleaseUnusedSpans();
  std::vector<void*> blocks(bytes / kBlockBytes);
  std::size_t released = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (void*& b : blocks) {
      b = memarena::HostAllocator().Allocate(kBlockBytes);
      Touch(b, kBlockBytes);
    }
    for (void* b : blocks) memarena::HostAllocator().Deallocate(b);
    state.ResumeTiming();
    released += memarena::ReleaseUnusedSpans();
  }
  state.counters["MiB_released/s"] =
      benchmark::Counter(static_cast<double>(released) / kMiB, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReleasePerMiB)->Arg(16)->Arg(64)->UseRealTime();

// The floor: one madvise(MADV_DONTNEED) per 256 KiB block over the same amount of touched pages.
void BM_MadviseLoop(benchmark::State& state) {
  const std::size_t bytes = static_cast<std::size_t>(state.range(0)) * kMiB;
  char* region = static_cast<char*>(memarena::platform::MapPages(bytes, kMiB));
  if (region == nullptr) {
    state.SkipWithError("mmap failed");
    return;
  }
  std::size_t released = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Touch(region, bytes);
    state.ResumeTiming();
    for (std::size_t off = 0; off < bytes; off += kBlockBytes) {
      memarena::platform::DecommitPages(region + off, kBlockBytes);
    }
    released += bytes;
  }
  memarena::platform::UnmapPages(region, bytes);
  state.counters["MiB_released/s"] =
      benchmark::Counter(static_cast<double>(released) / kMiB, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MadviseLoop)->Arg(16)->Arg(64)->UseRealTime();

// ---- 6,000 test cases ---------------------------------------------------------------------

constexpr int kCases = 6000;
constexpr std::size_t kCaseBytes = 4 * kMiB;
constexpr std::size_t kCeiling = 24 * kMiB;  // the run without release peaks near 16 MiB
constexpr std::size_t kKeep = 16 * kMiB;

enum Mode { kNoRelease, kReleaseAll, kReleaseKeepWarm };

// One case: about 4 MiB in log-uniform sizes of 16 B - 512 KiB, touched, then freed; one
// case in 50 leaves a small object behind, as suites do with caches and singletons.
int RunCase(workload::Rng& rng, std::vector<void*>& live, std::vector<void*>& survivors) {
  memarena::Allocator& host = memarena::HostAllocator();
  int ooms = 0;
  for (std::size_t total = 0; total < kCaseBytes;) {
    const std::size_t size = rng.LogUniform(16, 512 << 10);
    void* p = host.TryAllocate(size);
    if (p == nullptr) {
      ++ooms;
      break;
    }
    workload::Touch(p, size, 1);
    live.push_back(p);
    total += size;
  }
  if (rng.Next() % 50 == 0) survivors.push_back(host.TryAllocate(rng.LogUniform(16, 4096)));
  for (void* p : live) host.Deallocate(p);
  live.clear();
  return ooms;
}

void BM_TestSuite(benchmark::State& state) {
  const auto mode = static_cast<Mode>(state.range(0));
  memarena::SetReleaseKeep(0);
  memarena::ReleaseUnusedSpans();
  if (!memarena::SetCeiling(kCeiling)) {
    state.SkipWithError("more than the ceiling is held before the run");
    return;
  }
  memarena::SetReleaseKeep(mode == kReleaseKeepWarm ? kKeep : 0);
  memarena::HostAllocator().ResetPeakStats();
  std::vector<void*> live;
  std::vector<void*> survivors;
  int ooms = 0;
  for (auto _ : state) {
    workload::Rng rng(2026);
    for (int c = 0; c < kCases; ++c) {
      ooms += RunCase(rng, live, survivors);
      if (mode != kNoRelease) memarena::ReleaseUnusedSpans();
    }
  }
  for (void* p : survivors) memarena::HostAllocator().Deallocate(p);
  const memarena::AllocatorStats s = memarena::HostAllocator().GetStats();
  state.counters["peak_held_MiB"] = static_cast<double>(s.peak_bytes_held) / kMiB;
  state.counters["ceiling_MiB"] = static_cast<double>(kCeiling) / kMiB;
  state.counters["ooms"] = ooms;
  memarena::SetReleaseKeep(0);
  memarena::SetCeiling(0);
}
BENCHMARK(BM_TestSuite)
    ->ArgName("mode")  // 0 no release, 1 release all after each case, 2 release keeping 16 MiB
    ->Arg(kNoRelease)->Arg(kReleaseAll)->Arg(kReleaseKeepWarm)
    ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
