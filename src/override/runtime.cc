// The drop-in's process state: MEMARENA_CONF read once at load (a constructor, so the heap
// already works and parsing may allocate), stats_at_exit, trace_file, malloc_trim.
#include "override/runtime.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <string>

#include "common/observability_config.h"
#include "common/trace_log.h"
#include "host/host_api.h"
#include "memarena/config.h"
#include "memarena/errors.h"
#include "memarena/host.h"
#include "memarena/stats.h"
#include "override/dropin.h"
#include "override/observability_setup.h"
#include "platform/os.h"

namespace memarena::dropin {

std::atomic<bool> g_tracing{false};

namespace {

// Never destroyed: threads and later exit handlers may still allocate after static
// destructors ran, and Record on a closed log is a defined no-op.
union TraceStorage {
  constexpr TraceStorage() : log() {}
  ~TraceStorage() {}
  common::TraceLog log;
};
constinit TraceStorage g_trace;

void WriteMessage(const std::string& text) noexcept {
  platform::WriteStderr(text.data(), text.size());
}

void PrintStatsAtExit() noexcept {
  try {
    Allocator& host = HostAllocator();
    WriteMessage(FormatStats(host.GetStats(), host.name()));
  } catch (const std::exception& e) {
    WriteMessage(fmt::format("memarena: stats_at_exit failed: {}\n", e.what()));
  }
}

void CloseTraceAtExit() noexcept {
  if (g_tracing.exchange(false)) g_trace.log.Close();
}

// A forked child stops recording: its rows would share the parent's file and addresses.
// Its copy of the buffer is dropped unwritten, so the parent's rows are not duplicated.
void StopTracingInChild() noexcept { g_tracing.store(false, std::memory_order_relaxed); }

void StartTrace(const std::string& path) {
  // "%p" in the path becomes the process id, so programs that spawn children (which read
  // the same MEMARENA_CONF) can give each process its own file.
  const std::string expanded = common::ExpandPidPattern(path, getpid());
  if (!g_trace.log.Open(expanded.c_str())) {
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

}  // namespace

void ConfigureFromEnvironment() noexcept {
  try {
    // The host allocator owns MEMARENA_CONF's host keys and its one error message.
    HostAllocator();
    const char* text = platform::GetEnv("MEMARENA_CONF");
    if (text == nullptr) return;
    HostConfig config;
    try {
      config = HostConfig::Parse(text);
    } catch (const ConfigError&) {
      return;  // already reported by HostAllocator(); the defaults have no drop-in extras
    }
    if (config.stats_at_exit) {
      static bool registered = false;
      if (!registered) {
        registered = true;
        std::atexit(&PrintStatsAtExit);
      }
    }
    if (!config.trace_file.empty()) StartTrace(config.trace_file);
    ConfigureObservability(config);
  } catch (const std::exception& e) {
    WriteMessage(fmt::format("memarena: MEMARENA_CONF could not be applied: {}\n", e.what()));
  }
}

void TraceAllocate(const void* ptr, std::size_t bytes) noexcept {
  g_trace.log.Record(common::TraceAction::kAllocate, ptr, bytes);
}

void TraceFree(const void* ptr) noexcept {
  if (ptr != nullptr) g_trace.log.Record(common::TraceAction::kFree, ptr, host::UsableSize(ptr));
}

void TraceFailure(std::size_t bytes) noexcept {
  g_trace.log.Record(common::TraceAction::kAllocateFailure, nullptr, bytes);
}

void* AllocateTraced(std::size_t bytes, std::size_t alignment) noexcept {
  void* ptr = host::Allocate(bytes, alignment);
  if (ptr == nullptr) return FailAllocation(bytes);
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
