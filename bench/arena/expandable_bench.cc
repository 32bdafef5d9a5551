// A recorded trace through the BFC arena on host memory as `memarena replay --allocator bfc`
// builds it: plain (kNextPowerOfTwo and kSameAsRequested over mmap regions that never merge,
// as on a device) side by side with the expandable arena (a virtual range with 2 MiB
// granules). Reports ops/s (items_per_second)
// and peak held / peak requested, so the cost and the gain of expandable_segments:1 come
// from one run.
// Run: memarena demo --no-progress --write-traces DIR &&
//      arena_expandable_bench --trace=DIR/batched_inference.csv --benchmark_repetitions=9
//        --benchmark_report_aggregates_only=true --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "memarena/tracing.h"
#include "replay_target.h"

namespace memarena {
namespace {

// A trace turned into slot numbers once, so that the timed loop does no hashing.
struct Op {
  bool allocate;
  std::size_t slot;
  std::size_t size;
};

struct Program {
  std::vector<Op> ops;
  std::size_t slots = 0;
};

Program Compile(const std::vector<TraceEvent>& trace) {
  Program program;
  std::unordered_map<std::uintptr_t, std::size_t> live;
  for (const TraceEvent& r : trace) {
    if (r.action == TraceAction::kAllocate) {
      live[r.pointer] = program.slots;
      program.ops.push_back({true, program.slots++, r.size});
    } else if (r.action == TraceAction::kFree) {
      const auto it = live.find(r.pointer);
      if (it == live.end()) continue;
      program.ops.push_back({false, it->second, 0});
      live.erase(it);
    }
  }
  return program;
}

// The arena exactly as `memarena replay --allocator bfc --config CONFIG` builds it.
void BM_Trace(benchmark::State& state, const Program* program, std::string config) {
  std::vector<void*> slots(program->slots, nullptr);
  AllocatorStats stats;
  for (auto _ : state) {
    const std::unique_ptr<tools::ReplayTarget> target = tools::MakeTarget("bfc", config);
    Allocator& arena = target->allocator();
    for (const Op& op : program->ops) {
      if (op.allocate) {
        slots[op.slot] = arena.TryAllocate(op.size);
      } else {
        arena.Deallocate(slots[op.slot]);
        slots[op.slot] = nullptr;
      }
    }
    state.PauseTiming();
    stats = arena.GetStats();
    for (void*& p : slots) {
      arena.Deallocate(p);
      p = nullptr;
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * program->ops.size()));
  state.counters["held/requested"] =
      static_cast<double>(stats.peak_bytes_held) / static_cast<double>(stats.peak_bytes_requested);
  state.counters["peak_held_MiB"] = static_cast<double>(stats.peak_bytes_held) / (1 << 20);
  state.counters["ooms"] = static_cast<double>(stats.num_ooms);
  state.counters["commits"] = static_cast<double>(stats.num_commits);
  state.counters["decommits"] = static_cast<double>(stats.num_decommits);
}

}  // namespace
}  // namespace memarena

int main(int argc, char** argv) {
  std::string trace_path;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--trace=", 8) == 0) {
      trace_path = argv[i] + 8;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (trace_path.empty()) {
    fmt::print(stderr,
               "arena_expandable_bench: --trace=FILE is required (an RMM-format CSV trace, e.g. "
               "from `memarena demo --write-traces DIR`: DIR/batched_inference.csv)\n");
    return 2;
  }
  static const memarena::Program program = memarena::Compile(memarena::ReadTrace(trace_path));
  for (const char* config : {"arena_extend_strategy:kNextPowerOfTwo",
                             "arena_extend_strategy:kSameAsRequested", "expandable_segments:1"}) {
    benchmark::RegisterBenchmark(fmt::format("BM_Trace/{}", config).c_str(), memarena::BM_Trace,
                                 &program, std::string(config))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  int count = static_cast<int>(rest.size());
  benchmark::Initialize(&count, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
