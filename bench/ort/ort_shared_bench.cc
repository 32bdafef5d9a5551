// N inference sessions of TinyModel: each with ORT's own CPU arena (ORT's default), all on
// one ORT arena shared through the environment (CreateAndRegisterAllocator), and all on one
// memarena BfcArena registered with the environment (RegisterAllocator), each shared arena
// with OrtArenaCfg's defaults and with kSameAsRequested. Reports the peak bytes held by the
// arenas (from ORT's and memarena's own stats) and the CPU time per Run.
//   cmake --build build --target ort_runtime ort_shared_bench
//   build/bench/ort/ort_shared_bench --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "memarena/memarena.h"
#include "memarena/ort.h"
#include "ort/ort_abi.h"
#include "ort_runtime.h"
#include "tiny_model.h"

namespace {

namespace abi = memarena::ort::abi;
using memarena::ort::testing::BuildTinyModel;
using memarena::ort::testing::Runtime;
using memarena::ort::testing::Session;
using memarena::ort::testing::TinyModel;
using memarena::ort::testing::TinyModelInput;

constexpr std::size_t kWidth = 512;  // 2 MiB of weights per model
constexpr std::int64_t kBatches[] = {1, 16, 64, 7};

// The runtime, loaded once; null (with the reason) when it is not installed.
Runtime* LoadRuntime(std::string& reason) {
  static std::string skip;
  static Runtime* runtime = []() -> Runtime* {
    const auto where = memarena::ort::testing::LocateRuntime();
    if (!where.skip_reason.empty()) {
      skip = where.skip_reason + " (build the ort_runtime target)";
      return nullptr;
    }
    return new Runtime(where.library);
  }();
  reason = skip;
  return runtime;
}

std::vector<TinyModel> Models(int count) {
  std::vector<TinyModel> models;
  for (int i = 0; i < count; ++i) models.push_back(BuildTinyModel(kWidth, 100 + i));
  return models;
}

// One Run of every session per iteration, cycling the batch sizes.
void RunSessions(benchmark::State& state, const std::vector<std::unique_ptr<Session>>& sessions) {
  std::vector<std::vector<float>> inputs;
  for (std::int64_t batch : kBatches) inputs.push_back(TinyModelInput(batch, kWidth));
  std::size_t step = 0;
  for (auto _ : state) {
    const std::size_t i = step++ % std::size(kBatches);
    for (const auto& session : sessions)
      benchmark::DoNotOptimize(session->Run(inputs[i], kBatches[i]));
  }
  state.counters["time_per_run"] = benchmark::Counter(
      static_cast<double>(sessions.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// The memory info of ORT's CPU arena (release it with ReleaseMemoryInfo).
OrtMemoryInfo* CpuArenaMemoryInfo(const OrtApi* api) {
  OrtMemoryInfo* info = nullptr;
  memarena::ort::ThrowIfError(
      api,
      abi::Get<abi::CreateCpuMemoryInfoFn>(api, abi::Entry::kCreateCpuMemoryInfo)(
          abi::kOrtArenaAllocator, abi::kOrtMemTypeDefault, &info),
      "CreateCpuMemoryInfo");
  return info;
}

// ORT's stat `key` for the CPU allocator of `session` (its own arena).
std::size_t OrtArenaStat(const Runtime& runtime, const Session& session, const char* key) {
  const OrtApi* api = runtime.api();
  OrtMemoryInfo* info = CpuArenaMemoryInfo(api);
  OrtAllocator* allocator = nullptr;
  OrtStatus* status = abi::Get<abi::CreateAllocatorFn>(api, abi::Entry::kCreateAllocator)(
      session.get(), info, &allocator);
  abi::Get<abi::ReleaseMemoryInfoFn>(api, abi::Entry::kReleaseMemoryInfo)(info);
  memarena::ort::ThrowIfError(api, status, "CreateAllocator");
  OrtKeyValuePairs* pairs = nullptr;
  status =
      abi::Get<abi::AllocatorGetStatsFn>(api, abi::Entry::kAllocatorGetStats)(allocator, &pairs);
  abi::Get<abi::ReleaseAllocatorFn>(api, abi::Entry::kReleaseAllocator)(allocator);
  memarena::ort::ThrowIfError(api, status, "AllocatorGetStats");
  const char* value = abi::Get<abi::GetKeyValueFn>(api, abi::Entry::kGetKeyValue)(pairs, key);
  const std::size_t result = value ? std::strtoull(value, nullptr, 10) : 0;
  abi::Get<abi::ReleaseKeyValuePairsFn>(api, abi::Entry::kReleaseKeyValuePairs)(pairs);
  return result;
}

void BM_PerSessionOrtArenas(benchmark::State& state) {
  std::string reason;
  Runtime* runtime = LoadRuntime(reason);
  if (runtime == nullptr) return state.SkipWithError(reason.c_str());
  const auto models = Models(static_cast<int>(state.range(0)));
  std::vector<std::unique_ptr<Session>> sessions;
  for (const auto& model : models)
    sessions.push_back(std::make_unique<Session>(*runtime, model, false));
  RunSessions(state, sessions);
  // ORT's arena never gives memory back on its own: what it holds now is its peak.
  std::size_t held = 0;
  for (const auto& session : sessions) held += OrtArenaStat(*runtime, *session, "TotalAllocated");
  state.counters["peak_held_MiB"] = static_cast<double>(held) / (1 << 20);
}

void SharedMemarenaArena(benchmark::State& state, const memarena::ArenaConfig& config) {
  std::string reason;
  Runtime* runtime = LoadRuntime(reason);
  if (runtime == nullptr) return state.SkipWithError(reason.c_str());
  const auto models = Models(static_cast<int>(state.range(0)));
  memarena::BfcArena arena(std::make_shared<memarena::HostMemorySource>(), config);
  memarena::ort::OrtAllocatorAdapter adapter(runtime->api(), arena);
  memarena::ort::RegisterSharedAllocator(runtime->api(), runtime->env(), adapter);
  {
    std::vector<std::unique_ptr<Session>> sessions;
    for (const auto& model : models)
      sessions.push_back(std::make_unique<Session>(*runtime, model, true));
    RunSessions(state, sessions);
  }
  memarena::ort::UnregisterSharedAllocator(runtime->api(), runtime->env(), adapter);
  state.counters["peak_held_MiB"] =
      static_cast<double>(arena.GetStats().peak_bytes_held) / (1 << 20);
}

// One ORT arena for all sessions, configured from the same ArenaConfig.
void SharedOrtArena(benchmark::State& state, const memarena::ArenaConfig& config) {
  std::string reason;
  Runtime* runtime = LoadRuntime(reason);
  if (runtime == nullptr) return state.SkipWithError(reason.c_str());
  const OrtApi* api = runtime->api();
  const auto models = Models(static_cast<int>(state.range(0)));
  std::vector<const char*> keys;
  std::vector<std::size_t> values;
  const auto entries = memarena::ort::OrtArenaCfgFromArenaConfig(config);
  for (const auto& entry : entries) {
    keys.push_back(entry.key.c_str());
    values.push_back(static_cast<std::size_t>(entry.value));
  }
  OrtArenaCfg* arena_cfg = nullptr;
  memarena::ort::ThrowIfError(api,
                              abi::Get<abi::CreateArenaCfgV2Fn>(api, abi::Entry::kCreateArenaCfgV2)(
                                  keys.data(), values.data(), keys.size(), &arena_cfg),
                              "CreateArenaCfgV2");
  OrtMemoryInfo* info = CpuArenaMemoryInfo(api);
  memarena::ort::ThrowIfError(
      api,
      abi::Get<abi::CreateAndRegisterAllocatorFn>(api, abi::Entry::kCreateAndRegisterAllocator)(
          runtime->env(), info, arena_cfg),
      "CreateAndRegisterAllocator");
  std::size_t held = 0;
  {
    std::vector<std::unique_ptr<Session>> sessions;
    for (const auto& model : models)
      sessions.push_back(std::make_unique<Session>(*runtime, model, true));
    RunSessions(state, sessions);
    held = OrtArenaStat(*runtime, *sessions.front(), "TotalAllocated");  // the one shared arena
  }
  memarena::ort::ThrowIfError(api,
                              abi::Get<abi::UnregisterAllocatorFn>(
                                  api, abi::Entry::kUnregisterAllocator)(runtime->env(), info),
                              "UnregisterAllocator");
  abi::Get<abi::ReleaseMemoryInfoFn>(api, abi::Entry::kReleaseMemoryInfo)(info);
  abi::Get<abi::ReleaseArenaCfgFn>(api, abi::Entry::kReleaseArenaCfg)(arena_cfg);
  state.counters["peak_held_MiB"] = static_cast<double>(held) / (1 << 20);
}

memarena::ArenaConfig SameAsRequested() {
  memarena::ArenaConfig config;
  config.arena_extend_strategy = memarena::ArenaExtendStrategy::kSameAsRequested;
  return config;
}

// OrtArenaCfg's defaults (kNextPowerOfTwo from 1 MiB), as ORT's own arenas use them.
void BM_SharedOrtArena(benchmark::State& state) { SharedOrtArena(state, {}); }
void BM_SharedMemarenaArena(benchmark::State& state) { SharedMemarenaArena(state, {}); }
// kSameAsRequested: regions of exactly the size asked for.
void BM_SharedOrtArenaSameAsRequested(benchmark::State& state) {
  SharedOrtArena(state, SameAsRequested());
}
void BM_SharedMemarenaArenaSameAsRequested(benchmark::State& state) {
  SharedMemarenaArena(state, SameAsRequested());
}

BENCHMARK(BM_PerSessionOrtArenas)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SharedOrtArena)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SharedMemarenaArena)->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SharedOrtArenaSameAsRequested)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SharedMemarenaArenaSameAsRequested)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
