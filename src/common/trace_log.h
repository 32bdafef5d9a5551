// TraceLog: the writer of allocation traces in RMM's replay-log CSV format, usable from inside
// malloc (the drop-in's trace_file) and by TracingAllocator.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/mutex.h"
#include "memarena/tracing.h"

namespace memarena::common {

using memarena::TraceAction;
using memarena::TraceEvent;

// Writes RMM replay-log CSV rows (header Thread,Time,Action,Pointer,Size,Stream):
//   Thread  platform::ThreadId() of the caller
//   Time    HH:MM:SS.uuuuuu since Open (RMM writes wall-clock time of day; elapsed time keeps
//           a log monotonic across midnight and is what replay needs)
//   Action  allocate | free | allocate failure
//   Pointer hex with 0x; Size and Stream decimal.
// Never allocates heap memory (the buffer is part of the object), so it is safe to call
// inside malloc; thread-safe (one mutex, which never allocates either); buffered: rows reach
// the file when the buffer fills, on Flush and on Close. Rows keep the order in which
// Record calls took the lock, which is the order replay uses.
class TraceLog {
 public:
  constexpr TraceLog() noexcept = default;
  ~TraceLog() { Close(); }
  TraceLog(const TraceLog&) = delete;
  TraceLog& operator=(const TraceLog&) = delete;

  // Truncates or creates `path` and writes the header; false when the file cannot be
  // opened or written. An already open log is closed first.
  bool Open(const char* path) noexcept;

  // Appends one row. A no-op when the log is not open (one branch under the lock).
  void Record(TraceAction action, const void* ptr, std::size_t size,
              std::uint64_t stream = 0) noexcept;

  // Writes buffered rows to the file.
  void Flush() noexcept;

  // Flushes and closes; later Record calls are no-ops until the next Open.
  void Close() noexcept;

  bool is_open() const noexcept;

  // Rows that could not be written (a failed write(2)); they are dropped, not retried.
  std::uint64_t dropped_rows() const noexcept;

  static constexpr std::size_t kBufferBytes = 32 * 1024;

 private:
  void FlushLocked() noexcept MEMARENA_REQUIRES(mutex_);

  mutable common::Mutex mutex_;
  int fd_ MEMARENA_GUARDED_BY(mutex_) = -1;
  std::uint64_t start_ns_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::uint64_t dropped_rows_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::size_t used_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::size_t rows_in_buffer_ MEMARENA_GUARDED_BY(mutex_) = 0;
  char buffer_[kBufferBytes] MEMARENA_GUARDED_BY(mutex_) = {};
};

// Renders one event as a row (with its newline) into `out`, which holds at least
// kMaxTraceRowBytes; returns the length. time_ns is written as elapsed HH:MM:SS.uuuuuu;
// alignment has no column. Exposed for the tests and for writers that keep their own buffer.
inline constexpr std::size_t kMaxTraceRowBytes = 160;
std::size_t FormatTraceRow(char* out, const TraceEvent& event) noexcept;

}  // namespace memarena::common
