// Allocation traces: RMM's replay-log CSV format (read, write) and TracingAllocator, the
// wrapper that logs every call of any Allocator (it stacks like RMM's logging adaptor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "memarena/adaptors.h"
#include "memarena/allocator.h"

namespace memarena {

enum class TraceAction { kAllocate, kFree, kAllocateFailure };

// "allocate", "free" or "allocate failure", as RMM spells them.
std::string_view TraceActionName(TraceAction action) noexcept;

// One event of an allocation trace, the one vocabulary of every trace in memarena: a row of
// an RMM replay log (ReadTrace, WriteTrace, `memarena replay`), what TracingAllocator and the
// drop-in's trace_file record, and a recorded run the planner turns into tensors
// (TensorsFromTrace; the event's position is its time there).
struct TraceEvent {
  TraceAction action = TraceAction::kAllocate;
  // Names the block: its address in a recorded log, or any id (the planner's runs number
  // their allocations); an allocate and its free carry the same value.
  std::uintptr_t pointer = 0;
  std::size_t size = 0;       // bytes asked for (free rows: the block's usable size; 0 if unknown)
  std::size_t alignment = 1;  // allocate only; RMM's CSV has no such column, so 1 when read
  std::uint64_t stream = 0;
  std::uint64_t thread = 0;
  std::uint64_t time_ns = 0;  // from the Time column (HH:MM:SS.uuuuuu), in nanoseconds
};

// A trace that cannot be read or parsed; what() reads "SOURCE:LINE: problem".
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses RMM replay-log CSV. The header row names the columns (any order; unknown columns
// are ignored; Thread, Time, Action, Pointer, Size are required, Stream is optional).
// Pointer and Stream take hex (0x...) or decimal; Time takes HH:MM:SS.uuuuuu (RMM also
// wrote HH:MM:SS:uuuuuu; both parse). Blank lines are skipped. Throws TraceError naming
// `source` and the line for anything else. Costs one pass and one vector.
// `progress`, when set, is called about every 1% of the text and at the end with (bytes
// parsed, total bytes), so a command can show how far a large trace has got.
using TraceParseProgress = std::function<void(std::size_t, std::size_t)>;
std::vector<TraceEvent> ParseTrace(std::string_view text, std::string_view source = "trace",
                                    const TraceParseProgress& progress = {});

// Reads and parses a file; throws TraceError when it cannot be read or parsed. `progress`
// as for ParseTrace (reading the file is not counted: parsing is what takes the time).
std::vector<TraceEvent> ReadTrace(const std::string& path, const TraceParseProgress& progress = {});

// Writes `events` as RMM replay-log CSV; throws TraceError when the file cannot be written.
void WriteTrace(const std::string& path, std::span<const TraceEvent> events);

// Wraps `upstream` (which must outlive the wrapper) and appends one row per allocation,
// failed allocation and free to a CSV file in RMM's replay-log format. A free row carries
// the pointer's usable size (the wrapper keeps no map of requested sizes, so it stays
// allocation-free on the hot path). Tracing is opt-in: an allocator that is not wrapped pays
// nothing. Wrapped, each call costs the upstream call plus one formatted row appended to a
// 32 KiB buffer under a mutex; the buffer is written out when full, on Flush and at
// destruction. Stats, release and names are the upstream's.
class TracingAllocator final : public UpstreamAdaptor {
 public:
  // Throws TraceError when `path` cannot be opened for writing.
  TracingAllocator(Allocator& upstream, const std::string& path);
  ~TracingAllocator() override;  // flushes and closes the file

  // A pointer that is not a live block of the upstream (UsableSize 0) is neither logged nor
  // passed on: it goes to on_invalid_free under this wrapper's name, "tracing(UPSTREAM)".
  void ResetPeakStats() override;

  // Writes buffered rows to the file now.
  void Flush() noexcept;

 private:
  // Logs the upstream's answer, a std::bad_alloc from it included (then rethrown).
  void* DoAllocate(std::size_t bytes, std::size_t alignment, StreamHandle stream) override;
  FreeResult DoDeallocate(void* ptr, StreamHandle stream) noexcept override;
  std::size_t DoUsableSize(const void* ptr) const noexcept override;
  AllocatorStats DoGetStats() const override;

  struct Log;
  std::unique_ptr<Log> log_;
};

}  // namespace memarena
