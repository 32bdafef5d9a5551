// The drop-in's observability keys of MEMARENA_CONF: watermark lines on stderr, the heap
// profile (sampling on, written at exit and each monitor interval), the Prometheus file
// and the monitor thread.
#include "override/observability_setup.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "host/monitor_outputs.h"
#include "memarena/observability.h"
#include "platform/os.h"

namespace memarena::dropin {
namespace {

void WriteOutputsAtExit() noexcept { host::WriteMonitorOutputsAtExit(); }

void PrintCrossing(const WatermarkCrossing& crossing) {
  const std::string line = FormatWatermarkCrossing(crossing);
  platform::WriteStderr(line.data(), line.size());
}

}  // namespace

void ConfigureObservability(const common::DropinConfig& config) {
  if (!config.watermarks.empty()) SetWatermarks(config.watermarks, &PrintCrossing);
  if (!config.heap_profile.empty()) SetHeapSampleInterval(kDefaultHeapSampleInterval);
  if (config.heap_profile.empty() && config.prometheus_file.empty()) {
    if (config.monitor_interval.count() != 0) StartMonitor(config.monitor_interval);
    return;
  }
  host::SetMonitorOutputs(config.heap_profile, config.prometheus_file);
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit(&WriteOutputsAtExit);
  }
  if (config.monitor_interval.count() != 0) StartMonitor(config.monitor_interval);
}

}  // namespace memarena::dropin
