// libFuzzer harness: arbitrary text through the trace reader (ParseTrace, RMM replay-log CSV),
// then what it accepts through the writer and the replay engine. Invariants: the reader
// returns records or throws TraceError, nothing else; every record written back by the
// trace writer reads back the same (time to the microsecond the writer keeps); and the books
// of a replay on a BfcArena balance: every allocate row is an allocation or an OOM, frees
// never outnumber allocations or the free rows, the arena ends with nothing in use and as
// many frees as allocations, and without OOMs its peak request is the trace's own peak.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arena/simulated_memory_source.h"
#include "common/text.h"
#include "common/trace_log.h"
#include "fuzz/fuzz_input.h"
#include "memarena/arena.h"
#include "memarena/tracing.h"
#include "replay.h"
#include "replay_target.h"

namespace {

using memarena::TraceAction;
using memarena::TraceEvent;
using memarena::common::Trim;
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

// Bad lines dropped per input before the harness gives up on it: each drop costs a parse.
constexpr std::size_t kMaxRepairs = 32;

// The line number a TraceError from ParseTrace(text, "fuzz") names ("fuzz:N: ..."), or 0
// when it names none.
std::size_t LineNamed(std::string_view message) {
  constexpr std::string_view kSource = "fuzz:";
  if (!message.starts_with(kSource)) return 0;
  message.remove_prefix(kSource.size());
  std::size_t line = 0;
  const char* end = message.data() + message.size();
  const auto [ptr, ec] = std::from_chars(message.data(), end, line);
  return ec == std::errc() && ptr != end && *ptr == ':' ? line : 0;
}

// Line `number` (from 1) of `text` as the reader splits it (at '\n'), or nullopt.
std::optional<std::string_view> Line(std::string_view text, std::size_t number) {
  for (std::size_t n = 1; !text.empty(); ++n) {
    const std::size_t newline = text.find('\n');
    if (n == number) return text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
  }
  return std::nullopt;
}

bool IsNonBlankLine(std::string_view text, std::size_t number) {
  const std::optional<std::string_view> line = Line(text, number);
  return line.has_value() && !Trim(*line).empty();
}

// `text` without line `number` (which exists), newline included.
std::string WithoutLine(const std::string& text, std::size_t number) {
  const std::string_view line = *Line(text, number);
  const std::size_t begin = static_cast<std::size_t>(line.data() - text.data());
  const std::size_t end = std::min(text.size(), begin + line.size() + 1);
  return text.substr(0, begin) + text.substr(end);
}

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
  memarena::fuzz::FuzzInput in(data, size);
  std::string text = in.Rest();
  std::vector<TraceEvent> records;
  // A mutated trace usually has one bad row among many good ones. The reader is line by line,
  // so every error names the line it stopped at; the harness checks that, drops that line and
  // reads the rest again, so the good rows still reach the writer and the replay.
  for (std::size_t repairs = 0;; ++repairs) {
    memarena::fuzz::CountOperation();  // one parse; then one per row written back and replayed
    try {
      records = memarena::ParseTrace(text, "fuzz");
      break;
    } catch (const memarena::TraceError& e) {
      const std::size_t line = LineNamed(e.what());
      if (line == 0) {
        Check(std::string_view(e.what()).find("empty trace") != std::string_view::npos,
              "a TraceError names no line and the trace is not empty");
        Check(Trim(text).empty(), "'empty trace' for a text with a non-blank line");
        return 0;
      }
      Check(IsNonBlankLine(text, line), "a TraceError names a line that is blank or missing");
      if (repairs == kMaxRepairs) return 0;
      text = WithoutLine(text, line);
    }
  }
  Check(records.size() <= text.size() / 8, "more rows than the text has room for");
  memarena::fuzz::CountOperations(records.size());
  CheckRoundTrip(records);
  CheckReplayBooks(records);
  return 0;
}
