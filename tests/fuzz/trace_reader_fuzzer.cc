// libFuzzer harness: arbitrary text through the trace reader (ParseTrace, RMM replay-log CSV),
// then what it accepts through the writer and the replay engine. Invariants: the reader
// returns records or throws TraceError, nothing else; every record written back by the
// trace writer reads back the same (time to the microsecond the writer keeps); and the books
// of a replay on a BfcArena balance: every allocate row is an allocation or an OOM, frees
// never outnumber allocations or the free rows, the arena ends with nothing in use and as
// many frees as allocations, and without OOMs its peak request is the trace's own peak.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arena/simulated_memory_source.h"
#include "common/trace_log.h"
#include "fuzz/fuzz_input.h"
#include "memarena/arena.h"
#include "memarena/tracing.h"
#include "replay.h"
#include "replay_target.h"

namespace {

using memarena::TraceAction;
using memarena::TraceEvent;
using memarena::fuzz::Check;

// A BfcArena over a simulated 64 MiB source: addresses, not memory, so replay is cheap and
// absurd sizes fail at once.
class SimulatedArenaTarget final : public memarena::tools::ReplayTarget {
 public:
  SimulatedArenaTarget()
      : arena_(std::make_shared<memarena::arena::SimulatedMemorySource>(Options()), {}) {}
  memarena::Allocator& allocator() override { return arena_; }
  std::string label() const override { return "bfc (simulated)"; }

 private:
  static memarena::arena::SimulatedMemorySource::Options Options() {
    memarena::arena::SimulatedMemorySource::Options options;
    options.capacity = std::size_t{64} << 20;
    return options;
  }
  memarena::BfcArena arena_;
};

void CheckRoundTrip(const std::vector<TraceEvent>& records) {
  std::string text = "Thread,Time,Action,Pointer,Size,Stream\n";
  char row[memarena::common::kMaxTraceRowBytes];
  for (const TraceEvent& r : records) {
    text.append(row, memarena::common::FormatTraceRow(row, r));
  }
  const std::vector<TraceEvent> back = memarena::ParseTrace(text, "written back");
  Check(back.size() == records.size(), "the written trace reads back another number of rows");
  for (std::size_t i = 0; i < records.size(); ++i) {
    const TraceEvent& a = records[i];
    const TraceEvent& b = back[i];
    Check(a.thread == b.thread && a.action == b.action && a.pointer == b.pointer &&
              a.size == b.size && a.stream == b.stream,
          "a written row reads back different");
    Check(a.time_ns / 1000 == b.time_ns / 1000, "a written row reads back another time");
  }
}

void CheckReplayBooks(const std::vector<TraceEvent>& records) {
  std::size_t allocate_rows = 0, free_rows = 0, failure_rows = 0;
  for (const TraceEvent& r : records) {
    if (r.action == TraceAction::kAllocate) ++allocate_rows;
    if (r.action == TraceAction::kFree) ++free_rows;
    if (r.action == TraceAction::kAllocateFailure) ++failure_rows;
  }
  SimulatedArenaTarget target;
  memarena::tools::ReplayOptions options;
  options.max_samples = 16;
  const memarena::tools::ReplayResult result = memarena::tools::Replay(records, target, options);
  Check(result.events == records.size(), "the replay skipped rows");
  Check(result.allocations + result.ooms == allocate_rows,
        "an allocate row is neither an allocation nor an OOM");
  Check(result.trace_failures == failure_rows, "'allocate failure' rows miscounted");
  Check(result.frees + result.unknown_frees <= free_rows, "more frees than free rows");
  Check(result.frees <= result.allocations, "more frees than allocations");
  Check(result.final_stats.bytes_in_use <= result.final_stats.bytes_held, "in use above held");
  if (result.ooms == 0) {
    Check(result.peak_requested == memarena::tools::TracePeakRequested(records),
          "the replay's peak request is not the trace's");
  }
  const memarena::AllocatorStats after = target.allocator().GetStats();
  Check(after.bytes_in_use == 0 && after.bytes_requested == 0,
        "bytes in use after the replay freed everything");
  Check(after.num_allocs == after.num_frees, "the arena's allocations and frees do not balance");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  memarena::fuzz::CountOperation();  // the parse; then one per row written back and replayed
  memarena::fuzz::FuzzInput in(data, size);
  const std::string text = in.Rest();
  std::vector<TraceEvent> records;
  try {
    records = memarena::ParseTrace(text, "fuzz");
  } catch (const memarena::TraceError&) {
    return 0;
  }
  Check(records.size() <= text.size() / 8, "more rows than the text has room for");
  memarena::fuzz::CountOperations(records.size());
  CheckRoundTrip(records);
  CheckReplayBooks(records);
  return 0;
}
