// The drop-in's process state: MEMARENA_CONF read once at load (a constructor, so the heap
// already works and parsing may allocate), stats_at_exit / stats_file, trace_file, the
// rate-limited failed-malloc message, malloc_trim.
#include "override/runtime.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <new>
#include <string>
#include <vector>

#include "common/format.h"
#include "common/large_bss.h"
#include "common/observability_config.h"
#include "common/trace_log.h"
#include "host/heap.h"
#include "host/host_api.h"
#include "common/memarena_conf.h"
#include "memarena/host.h"
#include "memarena/stats.h"
#include "override/dropin.h"
#include "override/heap_introspection.h"
#include "override/observability_setup.h"
#include "platform/os.h"

namespace memarena::dropin {

std::atomic<bool> g_tracing{false};

namespace {

// Never destroyed: threads and later exit handlers may still allocate after static
// destructors ran, and Record on a closed log is a defined no-op. Built by StartTrace in
// zeroed storage (.bss, never touched) rather than constant-initialised: its fd of -1 would
// put the whole 32 KiB buffer in the library's .data, resident in every process.
MEMARENA_LARGE_BSS(trace) alignas(common::TraceLog) unsigned char g_trace_storage[sizeof(common::TraceLog)];
constinit bool g_trace_built = false;

// Only once StartTrace built it: every caller runs while g_tracing is or was set.
common::TraceLog& Trace() noexcept {
  return *std::launder(reinterpret_cast<common::TraceLog*>(g_trace_storage));
}

void WriteMessage(const std::string& text) noexcept {
  platform::WriteStderr(text.data(), text.size());
}

// Where the stats go at exit: a duplicate of stderr taken at load (programs such as GNU sort
// close fd 2 in their own exit handlers, which run before ours), or stats_file's path.
// Plain arrays, constant-initialized: the load-time constructor runs before this library's
// dynamic initializers, so a std::string here would not exist yet.
constinit int g_stats_fd = -1;
MEMARENA_LARGE_BSS(stats_path) constinit char g_stats_path[4096] = {};
constinit bool g_stats_detail = false;  // stats_detail: the per-size-class rows too
constinit long g_stats_owner_pid = 0;     // the process that read stats_file

// "%p" in the path becomes the process id, so programs that spawn children (which read the
// same MEMARENA_CONF) can give each process its own file.
std::string ExpandPidPattern(const std::string& path) {
  return common::ExpandPidPattern(path, getpid());
}

// Cold: never runs at start-up, so it stays out of .text.memarena_startup (docs/dropin.md).
[[gnu::cold]] void PrintStatsAtExit() noexcept {
  try {
    const std::string text = StatsText();
    if (g_stats_path[0] != '\0') {
      // A forked child's stats would replace its parent's in a file without "%p".
      if (!common::MayWriteOutput(g_stats_path, g_stats_owner_pid, getpid())) return;
      const std::string path = ExpandPidPattern(g_stats_path);
      const int fd = platform::OpenForWrite(path.c_str());
      if (fd >= 0 && platform::WriteAll(fd, text.data(), text.size())) {
        platform::CloseFile(fd);
        return;
      }
      if (fd >= 0) platform::CloseFile(fd);
      WriteMessage(fmt::format("memarena: MEMARENA_CONF stats_file: cannot write '{}': {}; the "
                               "stats follow on stderr\n", path, std::strerror(errno)));
    }
    if (g_stats_fd < 0 || !platform::WriteAll(g_stats_fd, text.data(), text.size())) {
      WriteMessage(text);
    }
  } catch (const std::exception& e) {
    WriteMessage(fmt::format("memarena: stats_at_exit failed: {}\n", e.what()));
  }
}

// Failed-malloc messages: the interval, when the last one went out, and how many were held
// back since. Relaxed atomics: an extra or a missing line under a race is harmless.
constinit std::atomic<std::uint64_t> g_oom_interval_ns{10'000'000'000};
constinit std::atomic<std::uint64_t> g_last_oom_message_ns{0};
constinit std::atomic<std::uint64_t> g_oom_messages_held_back{0};

void CloseTraceAtExit() noexcept {
  if (g_tracing.exchange(false)) Trace().Close();
}

// A forked child stops recording: its rows would share the parent's file and addresses.
// Its copy of the buffer is dropped unwritten, so the parent's rows are not duplicated.
void StopTracingInChild() noexcept { g_tracing.store(false, std::memory_order_relaxed); }

void StartTrace(const std::string& path) {
  const std::string expanded = ExpandPidPattern(path);
  if (!g_trace_built) {
    new (g_trace_storage) common::TraceLog();
    g_trace_built = true;
  }
  if (!Trace().Open(expanded.c_str())) {
    WriteMessage(fmt::format("memarena: MEMARENA_CONF trace_file: cannot write '{}'; not "
                             "tracing\n", expanded));
    return;
  }
  static bool handlers_registered = false;
  if (!handlers_registered) {
    handlers_registered = true;
    platform::OnFork(nullptr, nullptr, &StopTracingInChild);
    std::atexit(&CloseTraceAtExit);
  }
  g_tracing.store(true, std::memory_order_release);
}

// Runs when the library is loaded (LD_PRELOAD) or, for the link-time override, among the
// program's static initialisers. Allocations before it run on the defaults.
__attribute__((constructor)) void ConfigureAtLoad() { ConfigureFromEnvironment(); }

// What is left of `line` after `end`, where format_to_n is to write next.
template <std::size_t N>
std::size_t Room(const char (&line)[N], const char* end) noexcept {
  return end < line + N ? static_cast<std::size_t>(line + N - end) : 0;
}

}  // namespace

bool StatsDetailOn() noexcept { return g_stats_detail; }

namespace {

// The drop-in keys of a set MEMARENA_CONF. HostAllocator() applied the host keys and
// reported each bad key on its own line; the drop-in keys come from the same rows (their
// errors are among those already reported).
[[gnu::noinline]] void ApplyDropinConf() noexcept {
  try {
    std::vector<std::string> already_reported;
    common::MemarenaConf conf = common::MemarenaConfFromEnvironment(already_reported);
    common::DropinConfig& config = conf.dropin;
    g_oom_interval_ns.store(std::uint64_t{config.oom_message_interval} * 1'000'000'000,
                            std::memory_order_relaxed);
    g_stats_detail = config.stats_detail;  // malloc_stats prints the rows too
    if (config.stats_at_exit || !config.stats_file.empty()) {
      static bool registered = false;
      if (!registered) {
        registered = true;
        if (config.stats_file.size() >= sizeof g_stats_path) {
          WriteMessage(fmt::format("memarena: MEMARENA_CONF stats_file: the path is longer than "
                                   "{} bytes; the stats go to stderr\n", sizeof g_stats_path - 1));
        } else {
          config.stats_file.copy(g_stats_path, config.stats_file.size());
        }
        if (g_stats_path[0] == '\0') g_stats_fd = platform::DuplicateStderr();
        g_stats_owner_pid = getpid();
        std::atexit(&PrintStatsAtExit);
      }
    }
    if (!config.trace_file.empty()) StartTrace(config.trace_file);
    ConfigureObservability(config);
  } catch (const std::exception& e) {
    WriteMessage(fmt::format("memarena: MEMARENA_CONF could not be applied: {}\n", e.what()));
  }
}

}  // namespace

void ConfigureFromEnvironment() noexcept {
  HostAllocator();
  // Unset, every drop-in key keeps its default, which the globals above start with.
  if (common::MemarenaConfIsSet()) ApplyDropinConf();
}

// Cold: never runs at start-up, so it stays out of .text.memarena_startup (docs/dropin.md).
[[gnu::cold]] void ReportFailure(std::size_t bytes, std::size_t alignment, std::size_t count) noexcept {
  const std::uint64_t interval = g_oom_interval_ns.load(std::memory_order_relaxed);
  if (interval == 0) return;
  const std::uint64_t now = platform::NowNanos();
  std::uint64_t last = g_last_oom_message_ns.load(std::memory_order_relaxed);
  if ((last != 0 && now - last < interval) ||
      !g_last_oom_message_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    g_oom_messages_held_back.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::uint64_t held_back = g_oom_messages_held_back.exchange(0, std::memory_order_relaxed);
  const std::size_t ceiling = host::Ceiling();
  const AllocatorStats stats = host::Stats();
  // format_to_n into a stack buffer: no heap, which is what just failed.
  char line[512];
  char* end = fmt::format_to_n(line, sizeof line, "memarena: malloc of ").out;
  if (count > 1) end = fmt::format_to_n(end, Room(line, end), "{} x ", count).out;
  end = fmt::format_to_n(end, Room(line, end), "{} B", bytes).out;
  if (count == 1 && bytes >= 1024) {
    end = fmt::format_to_n(end, Room(line, end), " ({})", common::ByteCount{bytes}).out;
  }
  // The alignment is named only where it is not malloc's own.
  if (alignment > kMallocAlignment) {
    end = fmt::format_to_n(end, Room(line, end), " aligned to {} B", alignment).out;
  }
  if (count > 1) {
    end = fmt::format_to_n(end, Room(line, end),
                           " failed: the product overflows size_t: check how the count and the "
                           "size were computed")
              .out;
  } else if (host::NoBlockCanSpan(bytes, alignment)) {
    end = fmt::format_to_n(end, Room(line, end),
                           " failed: no such block fits in the {} B of addresses the heap maps "
                           "(48 bits), so no memory was asked of the OS: check how the size "
                           "and alignment were computed",
                           host::kMaxAllocationBytes)
              .out;
  } else if (ceiling != 0) {
    end = fmt::format_to_n(end, Room(line, end),
                           " failed: {} in use, {} held of the {} B ({}) ceiling (MEMARENA_CONF "
                           "ceiling or memarena::SetCeiling to raise it)",
                           common::ByteCount{stats.bytes_in_use},
                           common::ByteCount{stats.bytes_held}, ceiling,
                           common::ByteCount{ceiling})
              .out;
    if (bytes > ceiling) {  // no release or reuse could serve it
      end = fmt::format_to_n(end, Room(line, end), "; the request alone is above the ceiling")
                .out;
    }
  } else {
    end = fmt::format_to_n(end, Room(line, end),
                           " failed: the OS refused more memory ({} in use, {} held, no "
                           "ceiling)",
                           common::ByteCount{stats.bytes_in_use},
                           common::ByteCount{stats.bytes_held})
              .out;
  }
  end = fmt::format_to_n(end, Room(line, end),
                         "; {} more failures since the last such line; next at most {} s later "
                         "(MEMARENA_CONF oom_message_interval, 0 = none)\n",
                         held_back, interval / 1'000'000'000)
            .out;
  end = std::min(end, std::end(line));
  platform::WriteStderr(line, static_cast<std::size_t>(end - line));
}

void TraceAllocate(const void* ptr, std::size_t bytes) noexcept {
  Trace().Record(common::TraceAction::kAllocate, ptr, bytes);
}

void TraceFree(const void* ptr) noexcept {
  if (ptr != nullptr) Trace().Record(common::TraceAction::kFree, ptr, host::UsableSize(ptr));
}

void TraceFailure(std::size_t bytes) noexcept {
  Trace().Record(common::TraceAction::kAllocateFailure, nullptr, bytes);
}

MEMARENA_ALLOCATION_ENTRY void* AllocateTraced(std::size_t bytes, std::size_t alignment) noexcept {
  void* ptr = host::Allocate(bytes, alignment);
  if (ptr == nullptr) return FailAllocation(bytes, alignment);
  TraceAllocate(ptr, bytes);
  return ptr;
}

int Trim() noexcept {
  try {
    return ReleaseUnusedSpans() > 0 ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // namespace memarena::dropin
