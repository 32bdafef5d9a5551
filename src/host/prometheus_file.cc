// memarena::WritePrometheusFile (node_exporter textfile collector: write a temporary file,
// rename it over the target) and the monitor's per-interval outputs.
#include <fmt/format.h>

#include <atomic>
#include <stdexcept>

#include "common/mutex.h"
#include "common/observability_config.h"
#include "common/replace_file.h"
#include "host/monitor_outputs.h"
#include "host/watermarks.h"
#include "memarena/export.h"
#include "memarena/host.h"
#include "memarena/observability.h"
#include "platform/os.h"
#include "platform/stack.h"

namespace memarena {
namespace {

std::string ObservabilityGauges() {
  const GrowthVerdict growth = LastGrowthVerdict();
  return fmt::format(
      "# HELP memarena_watermark_level Highest watermark level (fraction of the ceiling) "
      "crossed and not re-armed; 0 when none.\n"
      "# TYPE memarena_watermark_level gauge\n"
      "memarena_watermark_level{{allocator=\"host\"}} {}\n"
      "# HELP memarena_growth_bytes_per_hour Slope of in-use bytes over the monitor window.\n"
      "# TYPE memarena_growth_bytes_per_hour gauge\n"
      "memarena_growth_bytes_per_hour{{allocator=\"host\"}} {:.0f}\n"
      "# HELP memarena_growth_detected 1 while the monitor judges in-use bytes to grow "
      "steadily.\n"
      "# TYPE memarena_growth_detected gauge\n"
      "memarena_growth_detected{{allocator=\"host\"}} {}\n",
      host::watermarks::CurrentLevel(), growth.bytes_per_hour, growth.growing ? 1 : 0);
}

struct Outputs {
  common::Mutex mutex;
  std::string heap_profile MEMARENA_GUARDED_BY(mutex);
  std::string prometheus_file MEMARENA_GUARDED_BY(mutex);
  // The process that set the paths. Read before the mutex: see WriteMonitorOutputs.
  std::atomic<long> owner_pid{0};
};

Outputs& TheOutputs() {
  static auto* outputs = new Outputs;  // never destroyed: written at exit and by the monitor
  return *outputs;
}

}  // namespace

void WritePrometheusFile(const std::string& path) {
  const std::string target = common::ExpandPidPattern(path, static_cast<int>(platform::ProcessId()));
  NamedStats host = Snapshot(HostAllocator());
  host.size_classes = HostSizeClassStats();
  const std::string text = StatsToPrometheus(std::span<const NamedStats>(&host, 1)) +
                           ObservabilityGauges();
  // The collector may read at any moment: it must see the old file or the whole new one.
  common::ReplaceFileContents(target, "WritePrometheusFile", [&text](int fd) {
    return platform::WriteAll(fd, text.data(), text.size());
  });
}

namespace host {

void SetMonitorOutputs(std::string heap_profile, std::string prometheus_file) {
  Outputs& outputs = TheOutputs();
  common::MutexLock hold(outputs.mutex);
  outputs.heap_profile = std::move(heap_profile);
  outputs.prometheus_file = std::move(prometheus_file);
  outputs.owner_pid.store(platform::ProcessId(), std::memory_order_relaxed);
}

namespace {

// The outputs are written only in the process that set them: a forked child (the drop-in
// writes them at every normal exit) would replace the parent's files with its own figures
// where the paths have no "%p", and it must not take the locks at all. The parent's monitor
// thread, absent in the child, may have held this mutex or the monitor's at the fork: 54 of
// 300 children that exited at once under monitor_interval:1ms hung there. The monitor does
// not run in a child.
bool OwnsOutputs() noexcept {
  return TheOutputs().owner_pid.load(std::memory_order_relaxed) == platform::ProcessId();
}

}  // namespace

void WriteMonitorOutputs() noexcept {
  try {
    Outputs& outputs = TheOutputs();
    if (!OwnsOutputs()) return;
    common::MutexLock hold(outputs.mutex);
    if (!outputs.heap_profile.empty()) WriteHeapProfile(outputs.heap_profile);
    if (!outputs.prometheus_file.empty()) WritePrometheusFile(outputs.prometheus_file);
  } catch (const std::exception& e) {
    const std::string line = fmt::format(
        "memarena: {}; check the heap_profile and prometheus_file paths in MEMARENA_CONF\n",
        e.what());
    platform::WriteStderr(line.data(), line.size());
  }
}

void WriteMonitorOutputsAtExit() noexcept {
  if (!OwnsOutputs()) return;
  try {
    StopMonitor();
  } catch (const std::exception&) {  // a join that failed: the thread may still write
  }
  WriteMonitorOutputs();
}

}  // namespace host
}  // namespace memarena
