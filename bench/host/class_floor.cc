// class_floor: the least memory a heap of size classes can hold for a recorded trace.
//
// A size-class heap keeps each class's memory for that class until a whole span of it is
// free, so while its spans do not empty it holds, per class, the most objects that class
// ever had live at once: the sum of those per-class peaks. When the classes peak at
// different times that sum is far above the trace's peak in use (issue 12's live_set and
// testsuite workloads). Thread-cache policies only move free objects between caches and
// spans; what goes below the sum is memory shared between sizes (page runs, which merge
// with their free neighbours, or spans that empty completely). This program measures both
// from a trace, so a miss of the RSS bar is explained by numbers, not by guesses:
//
//   peak in use   the largest sum of live blocks, each at the size the host gives it (its
//                 class, or whole pages above kMaxClassRequest)
//   class floor   sum over classes of (peak live objects x class size), plus the peak of
//                 the page runs; "in spans" rounds each class up to whole spans
//   run bound B   requests above B served as page runs instead of class objects: the sum
//                 of the per-class peaks below B plus the peak of the runs (perfect packing:
//                 a lower bound for such a heap, which then shares the runs' free pages)
//   per thread    the class floor with every thread's classes apart (each block counted for
//                 the thread that allocated it): what a heap holds whose threads keep the
//                 memory of their own frees, as thread caches without a bound do
//
// Usage: class_floor TRACE.csv   (an RMM replay log, e.g. from MEMARENA_CONF=trace_file=PATH)
// Frees of blocks the trace never allocated (made before recording started) are skipped. An
// allocation at the address of a block still live means the trace lacks that block's free
// (rows of several processes in one file, or lost rows): the old block counts as freed
// first, and the output says how often that happened.
#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <unordered_map>
#include <vector>

#include "host/heap.h"
#include "host/size_classes.h"
#include "memarena/tracing.h"

namespace {

using memarena::host::ClassFor;
using memarena::host::ClassInfo;
using memarena::host::ClassSize;
using memarena::host::kMaxClassRequest;
using memarena::host::kNumClasses;
using memarena::host::kPageSize;

// The run bounds compared, largest first; the first is the host's own (kMaxClassRequest).
constexpr std::array<std::size_t, 5> kRunBounds = {64 << 10, 32 << 10, 16 << 10, 8 << 10,
                                                   4 << 10};
static_assert(kRunBounds[0] == kMaxClassRequest, "the first bound is the host's");

std::size_t RunBytes(std::size_t size) { return (size + kPageSize - 1) / kPageSize * kPageSize; }

// Live objects per class, now and at most.
struct ClassPeaks {
  std::array<std::int64_t, kNumClasses + 1> live{};
  std::array<std::int64_t, kNumClasses + 1> peak{};

  void Add(std::size_t cls, std::int64_t step) {
    live[cls] += step;
    peak[cls] = std::max(peak[cls], live[cls]);
  }

  // Sum of the peaks of the classes of requests up to `bound`, in objects or whole spans.
  std::size_t Bytes(std::size_t bound, bool whole_spans) const {
    std::size_t bytes = 0;
    for (std::size_t cls = 1; cls <= kNumClasses && ClassSize(cls) <= bound; ++cls) {
      const auto objects = static_cast<std::size_t>(peak[cls]);
      if (!whole_spans) {
        bytes += objects * ClassSize(cls);
      } else {
        const std::size_t per_span = ClassInfo(cls).objects;
        bytes += (objects + per_span - 1) / per_span * ClassInfo(cls).pages * kPageSize;
      }
    }
    return bytes;
  }
};

struct Floor {
  ClassPeaks classes;
  std::unordered_map<std::uint64_t, ClassPeaks> per_thread;  // by the allocating thread
  std::array<std::size_t, kRunBounds.size()> run_bytes{};  // live runs above each bound
  std::array<std::size_t, kRunBounds.size()> run_peak{};
  std::size_t in_use = 0;  // at host sizes (classes up to kMaxClassRequest, runs above)
  std::size_t in_use_peak = 0;
  std::size_t allocations = 0;
  std::size_t unknown_frees = 0;
  std::size_t missing_frees = 0;  // allocations at the address of a live block

  void Apply(std::size_t size, std::uint64_t thread, bool allocate) {
    const std::int64_t step = allocate ? 1 : -1;
    std::size_t cls = 0;
    if (size <= kMaxClassRequest) {
      cls = ClassFor(size == 0 ? 1 : size);
      classes.Add(cls, step);
      per_thread[thread].Add(cls, step);
    }
    for (std::size_t b = 0; b < kRunBounds.size(); ++b) {
      if (size <= kRunBounds[b]) continue;
      run_bytes[b] = allocate ? run_bytes[b] + RunBytes(size) : run_bytes[b] - RunBytes(size);
      run_peak[b] = std::max(run_peak[b], run_bytes[b]);
    }
    const std::size_t host_size = cls != 0 ? ClassSize(cls) : RunBytes(size);
    in_use = allocate ? in_use + host_size : in_use - host_size;
    in_use_peak = std::max(in_use_peak, in_use);
  }
};

double MiB(std::size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: class_floor TRACE.csv\n(an RMM replay log: record one with "
                 "MEMARENA_CONF=trace_file=PATH LD_PRELOAD=libmemarena_malloc.so PROGRAM)\n");
    return 2;
  }
  std::vector<memarena::TraceEvent> trace;
  try {
    trace = memarena::ReadTrace(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "class_floor: %s\n", e.what());
    return 1;
  }
  Floor floor;
  struct Block {
    std::size_t size;       // bytes asked for
    std::uint64_t thread;   // that allocated it
  };
  std::unordered_map<std::uintptr_t, Block> blocks;  // live ones
  for (const memarena::TraceEvent& event : trace) {
    if (event.action == memarena::TraceAction::kAllocate) {
      const auto [it, fresh] = blocks.try_emplace(event.pointer, Block{event.size, event.thread});
      if (!fresh) {
        ++floor.missing_frees;
        floor.Apply(it->second.size, it->second.thread, false);
        it->second = Block{event.size, event.thread};
      }
      ++floor.allocations;
      floor.Apply(event.size, event.thread, true);
    } else if (event.action == memarena::TraceAction::kFree) {
      const auto it = blocks.find(event.pointer);
      if (it == blocks.end()) {
        ++floor.unknown_frees;
        continue;
      }
      floor.Apply(it->second.size, it->second.thread, false);
      blocks.erase(it);
    }
  }
  const std::size_t peak = floor.in_use_peak;
  std::printf("%zu allocations (%zu frees of blocks allocated before the trace, skipped)\n",
              floor.allocations, floor.unknown_frees);
  if (floor.missing_frees != 0) {
    std::printf("warning: %zu allocations at the address of a live block: the trace lacks its "
                "free (several processes in one file? record with trace_file=PATH.%%p); each "
                "counted as freed first\n",
                floor.missing_frees);
  }
  std::printf("peak in use at the host's sizes: %.2f MiB\n", MiB(peak));
  std::printf("run bound    class peaks  in whole spans  run peak  floor (spans + runs)  / peak in use\n");
  for (std::size_t b = 0; b < kRunBounds.size(); ++b) {
    const std::size_t classes = floor.classes.Bytes(kRunBounds[b], false);
    const std::size_t spans = floor.classes.Bytes(kRunBounds[b], true);
    const std::size_t runs = floor.run_peak[b];
    std::printf("%6zu KiB%s %11.2f %15.2f %9.2f %21.2f %14.2f\n", kRunBounds[b] >> 10,
                b == 0 ? "*" : " ", MiB(classes), MiB(spans), MiB(runs), MiB(spans + runs),
                peak == 0 ? 0.0 : static_cast<double>(spans + runs) / static_cast<double>(peak));
  }
  std::printf("(* the host's bound, kMaxClassRequest; MiB throughout)\n");
  std::size_t apart = 0;
  for (const auto& [thread, peaks] : floor.per_thread) apart += peaks.Bytes(kMaxClassRequest, true);
  std::printf("per thread: %zu threads' classes apart, in whole spans: %.2f MiB (+ runs %.2f)\n",
              floor.per_thread.size(), MiB(apart), MiB(floor.run_peak[0]));
  return 0;
}
