// Replay of a trace (memarena::TraceEvent rows) through an allocator, with the timeline the
// reports draw: in use and held over the events, and where releases and OOMs happened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memarena/stats.h"
#include "memarena/tracing.h"
#include "replay_target.h"

namespace memarena::tools {

// Where a new phase (a test case, an inference request) starts, and its key (for the planned
// arena, the input-shape signature of the run).
struct Phase {
  std::size_t first_event = 0;
  std::uint64_t key = 0;
};

struct ReplayOptions {
  // Phases in event order; empty means the whole trace is one phase.
  std::vector<Phase> phases;
  // Call ReleaseUnusedSpans() after each phase (what the gtest guard does between tests).
  bool release_between_phases = false;
  // About this many timeline points (plus one before and after each release and OOM).
  std::size_t max_samples = 1500;
  // Called about every 1% of the events with (events done, total).
  std::function<void(std::size_t, std::size_t)> progress;
  // Called when a pass starts: "recording" (the pass a planned target learns from, planning
  // at each phase start) or "replaying" (the measured pass).
  std::function<void(std::string_view)> phase;
};

struct TimelinePoint {
  std::size_t event = 0;
  std::size_t in_use = 0;
  std::size_t held = 0;
};

struct ReplayMark {
  enum class Kind { kRelease, kOom };
  Kind kind = Kind::kRelease;
  std::size_t event = 0;
  std::size_t bytes = 0;  // released bytes, or the request that failed
};

struct ReplayResult {
  std::string allocator;  // the target's label
  std::size_t events = 0;
  std::size_t allocations = 0;
  std::size_t frees = 0;
  std::size_t ooms = 0;
  std::size_t unknown_frees = 0;    // frees of pointers the trace never allocated
  std::size_t trace_failures = 0;   // "allocate failure" rows: failed in the recorded run
  std::size_t peak_in_use = 0;
  std::size_t peak_requested = 0;
  std::size_t peak_held = 0;
  std::size_t limit_bytes = 0;
  std::size_t released_bytes = 0;   // by releases between phases
  double fragmentation = 0.0;       // fragmentation at the sample where held was largest
  double seconds = 0.0;             // wall time of the allocate/free calls and sampling
  double ops_per_second = 0.0;
  AllocatorStats final_stats;       // after the last event, before leftovers are freed
  std::vector<TimelinePoint> timeline;
  std::vector<ReplayMark> marks;
};

// Replays `trace` through `target`: each allocate row allocates its size (default
// alignment) and remembers the new pointer under the recorded one; each free row frees it.
// A failed allocation is an OOM (its later free is skipped); "allocate failure" rows are
// counted, not replayed; frees of unknown pointers are counted and skipped. Peaks are reset
// first; what the trace leaves allocated is freed at the end.
ReplayResult Replay(std::span<const TraceEvent> trace, ReplayTarget& target,
                    const ReplayOptions& options = {});

// The peak of the sum of live requested sizes in a trace, without replaying it: what any
// allocator must at least hand out.
std::size_t TracePeakRequested(std::span<const TraceEvent> trace);

}  // namespace memarena::tools
