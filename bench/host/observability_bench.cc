// The cost of watermarks and heap sampling on the malloc/free pair, side by side in one run:
// the host heap plain, with watermarks set (75/88/95 % of a 64 GiB ceiling), and with
// sampling on (512 KiB mean), and the cost of one sample (every allocation sampled). Run
// with --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true
// --benchmark_report_aggregates_only=true.
#include <benchmark/benchmark.h>

#include "host/host_api.h"
#include "memarena/memarena.h"

namespace {

struct Plain {
  static void Setup() {}
  static void Teardown() {}
};

struct WithWatermarks {
  static void Setup() {
    memarena::SetCeiling(std::size_t{64} << 30);
    memarena::SetWatermarks({0.75, 0.88, 0.95}, [](const memarena::WatermarkCrossing&) {});
  }
  static void Teardown() {
    memarena::SetWatermarks({}, nullptr);
    memarena::SetCeiling(0);
  }
};

// The fast path notices a new sampling interval at the thread's next slow path, which a
// pair of small blocks may not take for 64 MiB (sampler::kOffInterval): a block above the
// small sizes takes it at once, so every repetition samples from its first pair.
void NoticeSamplingNow() { memarena::host::Free(memarena::host::Allocate(std::size_t{1} << 20, 0)); }

struct WithSampling {
  static void Setup() {
    memarena::SetHeapSampleInterval(memarena::kDefaultHeapSampleInterval);
    NoticeSamplingNow();
  }
  static void Teardown() { memarena::SetHeapSampleInterval(0); }
};

// A mean interval of one byte samples every allocation: the pair then costs one whole
// sample (its span, stack walk, table entry and draw, and its free), which WithSampling
// pays once per 512 KiB on average. Not a setting anyone runs; it prices the slow path
// well above the noise of the amortised figure.
struct EverySampled {
  static void Setup() {
    memarena::SetHeapSampleInterval(1);
    NoticeSamplingNow();
  }
  static void Teardown() { memarena::SetHeapSampleInterval(0); }
};

template <typename Mode>
void BM_Pair(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  Mode::Setup();
  for (auto _ : state) {
    void* p = memarena::host::Allocate(size, 0);
    benchmark::DoNotOptimize(p);
    memarena::host::Free(p);
    benchmark::ClobberMemory();
  }
  Mode::Teardown();
  state.SetItemsProcessed(state.iterations());
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (long size : {16, 64, 256, 1024, 4096}) b->Arg(size);
}

BENCHMARK_TEMPLATE(BM_Pair, Plain)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_Pair, WithWatermarks)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_Pair, WithSampling)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_Pair, EverySampled)->Arg(16)->Arg(4096);

}  // namespace

BENCHMARK_MAIN();
