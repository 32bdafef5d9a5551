// The RMM replay-log CSV format: TraceLog (the allocation-free writer used inside malloc),
// and the reader and file writer behind memarena/tracing.h.
#include "common/trace_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/text.h"
#include "platform/os.h"

namespace memarena {

std::string_view TraceActionName(TraceAction action) noexcept {
  switch (action) {
    case TraceAction::kAllocate:
      return "allocate";
    case TraceAction::kFree:
      return "free";
    case TraceAction::kAllocateFailure:
      return "allocate failure";
  }
  return "allocate";
}

}  // namespace memarena

namespace memarena::common {
namespace {

constexpr std::string_view kHeader = "Thread,Time,Action,Pointer,Size,Stream\n";

// Integer rendering without fmt or the heap: this runs inside malloc.
char* PutDecimal(char* out, std::uint64_t value, int min_digits = 1) noexcept {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n < min_digits) digits[n++] = '0';
  while (n > 0) *out++ = digits[--n];
  return out;
}

char* PutHex(char* out, std::uint64_t value) noexcept {
  static constexpr char kDigits[] = "0123456789abcdef";
  *out++ = '0';
  *out++ = 'x';
  char digits[16];
  int n = 0;
  do {
    digits[n++] = kDigits[value & 0xf];
    value >>= 4;
  } while (value != 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

char* PutText(char* out, std::string_view text) noexcept {
  std::memcpy(out, text.data(), text.size());
  return out + text.size();
}

}  // namespace

std::size_t FormatTraceRow(char* out, const TraceEvent& event) noexcept {
  char* p = out;
  p = PutDecimal(p, event.thread);
  *p++ = ',';
  const std::uint64_t micros = event.time_ns / 1000;
  const std::uint64_t seconds = micros / 1000000;
  p = PutDecimal(p, seconds / 3600, 2);
  *p++ = ':';
  p = PutDecimal(p, seconds / 60 % 60, 2);
  *p++ = ':';
  p = PutDecimal(p, seconds % 60, 2);
  *p++ = '.';
  p = PutDecimal(p, micros % 1000000, 6);
  *p++ = ',';
  p = PutText(p, TraceActionName(event.action));
  *p++ = ',';
  p = PutHex(p, event.pointer);
  *p++ = ',';
  p = PutDecimal(p, event.size);
  *p++ = ',';
  p = PutDecimal(p, event.stream);
  *p++ = '\n';
  return static_cast<std::size_t>(p - out);
}

bool TraceLog::Open(const char* path) noexcept {
  common::MutexLock lock(mutex_);
  if (fd_ >= 0) {
    FlushLocked();
    platform::CloseFile(fd_);
    fd_ = -1;
  }
  const int fd = platform::OpenForWrite(path);
  if (fd < 0) return false;
  if (!platform::WriteAll(fd, kHeader.data(), kHeader.size())) {
    platform::CloseFile(fd);
    return false;
  }
  fd_ = fd;
  start_ns_ = platform::NowNanos();
  used_ = 0;
  rows_in_buffer_ = 0;
  dropped_rows_ = 0;
  return true;
}

void TraceLog::Record(TraceAction action, const void* ptr, std::size_t size,
                      std::uint64_t stream) noexcept {
  // The time is read and the row formatted under the lock, so rows are in time order in the
  // file; a row is ~50 bytes of integer rendering, short next to the write it may trigger.
  const std::uint64_t thread = platform::ThreadId();
  common::MutexLock lock(mutex_);
  if (fd_ < 0) return;
  char row[kMaxTraceRowBytes];
  const std::uint64_t now = platform::NowNanos();
  const TraceEvent event{action, reinterpret_cast<std::uintptr_t>(ptr), size, 1, stream,
                         thread, now - start_ns_};
  const std::size_t n = FormatTraceRow(row, event);
  if (used_ + n > kBufferBytes) FlushLocked();
  std::memcpy(buffer_ + used_, row, n);
  used_ += n;
  ++rows_in_buffer_;
}

void TraceLog::FlushLocked() noexcept {
  if (fd_ >= 0 && used_ > 0 && !platform::WriteAll(fd_, buffer_, used_)) {
    dropped_rows_ += rows_in_buffer_;
  }
  used_ = 0;
  rows_in_buffer_ = 0;
}

void TraceLog::Flush() noexcept {
  common::MutexLock lock(mutex_);
  FlushLocked();
}

void TraceLog::Close() noexcept {
  common::MutexLock lock(mutex_);
  if (fd_ < 0) return;
  FlushLocked();
  platform::CloseFile(fd_);
  fd_ = -1;
}

bool TraceLog::is_open() const noexcept {
  common::MutexLock lock(mutex_);
  return fd_ >= 0;
}

std::uint64_t TraceLog::dropped_rows() const noexcept {
  common::MutexLock lock(mutex_);
  return dropped_rows_;
}

}  // namespace memarena::common

namespace memarena {
namespace {

using common::SplitCsvFields;
using common::Trim;


// Parses the whole of `text` as an unsigned number; hex when it starts with 0x.
bool ParseUnsigned(std::string_view text, std::uint64_t& value) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  return ec == std::errc() && end == text.data() + text.size();
}

// HH:MM:SS.uuuuuu (or HH:MM:SS:uuuuuu) to nanoseconds. The fraction may have 1-9 digits.
bool ParseTime(std::string_view text, std::uint64_t& ns) {
  std::array<std::uint64_t, 3> hms{};
  for (int i = 0; i < 3; ++i) {
    const std::size_t sep = text.find_first_of(i < 2 ? ":" : ".:");
    std::string_view part = text.substr(0, sep);
    if (!ParseUnsigned(part, hms[static_cast<std::size_t>(i)]) || part.starts_with("0x")) {
      return false;
    }
    if (sep == std::string_view::npos) {
      if (i != 2) return false;
      text = {};
      break;
    }
    text.remove_prefix(sep + 1);
  }
  std::uint64_t fraction_ns = 0;
  if (!text.empty()) {
    if (text.size() > 9) return false;
    std::uint64_t digits = 0;
    if (!ParseUnsigned(text, digits) || text.starts_with("0x")) return false;
    fraction_ns = digits;
    for (std::size_t i = text.size(); i < 9; ++i) fraction_ns *= 10;
  }
  // A time past 2^64 ns (about 584 years) is an error rather than a silent wrap.
  std::uint64_t seconds = 0;
  return !__builtin_mul_overflow(hms[0], std::uint64_t{60}, &seconds) &&
         !__builtin_add_overflow(seconds, hms[1], &seconds) &&
         !__builtin_mul_overflow(seconds, std::uint64_t{60}, &seconds) &&
         !__builtin_add_overflow(seconds, hms[2], &seconds) &&
         !__builtin_mul_overflow(seconds, std::uint64_t{1000000000}, &ns) &&
         !__builtin_add_overflow(ns, fraction_ns, &ns);
}

bool ParseAction(std::string_view text, TraceAction& action) {
  for (TraceAction a : {TraceAction::kAllocate, TraceAction::kFree, TraceAction::kAllocateFailure}) {
    if (text == TraceActionName(a)) {
      action = a;
      return true;
    }
  }
  return false;
}

struct Columns {
  std::size_t thread = SIZE_MAX, time = SIZE_MAX, action = SIZE_MAX, pointer = SIZE_MAX,
              size = SIZE_MAX, stream = SIZE_MAX;
  std::size_t count = 0;
};

Columns ParseHeader(std::string_view line, std::size_t line_number, std::string_view source) {
  Columns c;
  const auto fields = SplitCsvFields(line);
  c.count = fields.size();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const std::string_view f = fields[i];
    if (f == "Thread") c.thread = i;
    if (f == "Time") c.time = i;
    if (f == "Action") c.action = i;
    if (f == "Pointer") c.pointer = i;
    if (f == "Size") c.size = i;
    if (f == "Stream") c.stream = i;
  }
  for (auto [index, name] : {std::pair{c.thread, "Thread"}, {c.time, "Time"}, {c.action, "Action"},
                             {c.pointer, "Pointer"}, {c.size, "Size"}}) {
    if (index == SIZE_MAX) {
      throw TraceError(fmt::format(
          "{}:{}: the header has no {} column; an RMM replay log starts with "
          "Thread,Time,Action,Pointer,Size,Stream (got '{}')",
          source, line_number, name, line));
    }
  }
  return c;
}

}  // namespace

std::vector<TraceEvent> ParseTrace(std::string_view text, std::string_view source,
                                    const TraceParseProgress& progress) {
  std::vector<TraceEvent> events;
  Columns columns;
  bool have_header = false;
  std::size_t line_number = 0;
  const std::size_t total = text.size();
  const std::size_t progress_stride = std::max<std::size_t>(1, total / 100);
  std::size_t next_progress = progress_stride;
  while (!text.empty()) {
    if (progress && total - text.size() >= next_progress) {
      progress(total - text.size(), total);
      next_progress = total - text.size() + progress_stride;
    }
    const std::size_t newline = text.find('\n');
    const std::string_view line = Trim(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line_number;
    if (line.empty()) continue;
    if (!have_header) {
      columns = ParseHeader(line, line_number, source);
      have_header = true;
      continue;
    }
    const auto fields = SplitCsvFields(line);
    auto fail = [&](std::string_view what, std::string_view value) {
      return TraceError(fmt::format("{}:{}: {} '{}' in line '{}'", source, line_number, what,
                                    value, line));
    };
    if (fields.size() != columns.count) {
      throw TraceError(fmt::format("{}:{}: expected {} fields, got {} in line '{}'", source,
                                   line_number, columns.count, fields.size(), line));
    }
    TraceEvent e;
    std::uint64_t value = 0;
    if (!ParseUnsigned(fields[columns.thread], e.thread)) {
      throw fail("bad Thread (a number)", fields[columns.thread]);
    }
    if (!ParseTime(fields[columns.time], e.time_ns)) {
      throw fail("bad Time (HH:MM:SS.uuuuuu, under 5124095 hours)", fields[columns.time]);
    }
    if (!ParseAction(fields[columns.action], e.action)) {
      throw fail("bad Action (allocate, free or allocate failure)", fields[columns.action]);
    }
    if (!ParseUnsigned(fields[columns.pointer], value)) {
      throw fail("bad Pointer (hex such as 0x7f00a000)", fields[columns.pointer]);
    }
    e.pointer = static_cast<std::uintptr_t>(value);
    if (!ParseUnsigned(fields[columns.size], value)) {
      throw fail("bad Size (bytes)", fields[columns.size]);
    }
    e.size = static_cast<std::size_t>(value);
    if (columns.stream != SIZE_MAX && !ParseUnsigned(fields[columns.stream], e.stream)) {
      throw fail("bad Stream (a number)", fields[columns.stream]);
    }
    events.push_back(e);
  }
  if (!have_header) throw TraceError(fmt::format("{}: empty trace (no header row)", source));
  if (progress) progress(total, total);
  return events;
}

std::vector<TraceEvent> ReadTrace(const std::string& path, const TraceParseProgress& progress) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(fmt::format("{}: cannot open the trace: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseTrace(text.str(), path, progress);
}

void WriteTrace(const std::string& path, std::span<const TraceEvent> events) {
  const int fd = platform::OpenForWrite(path.c_str());
  if (fd < 0) {
    throw TraceError(fmt::format("{}: cannot write the trace: {}", path, std::strerror(errno)));
  }
  std::string out(common::kHeader);
  char row[common::kMaxTraceRowBytes];
  for (const TraceEvent& e : events) {
    out.append(row, common::FormatTraceRow(row, e));
  }
  const bool ok = platform::WriteAll(fd, out.data(), out.size());
  platform::CloseFile(fd);
  if (!ok) throw TraceError(fmt::format("{}: write failed", path));
}

}  // namespace memarena
