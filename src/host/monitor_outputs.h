// The files the monitor refreshes each interval and the drop-in writes at exit: the heap
// profile and the Prometheus textfile named in MEMARENA_CONF (or by SetMonitorOutputs).
#pragma once

#include <string>

namespace memarena::host {

// Paths to refresh; empty means none. "%p" in either becomes the pid.
void SetMonitorOutputs(std::string heap_profile, std::string prometheus_file);

// Writes both files if set; a failure is reported on stderr, not thrown.
void WriteMonitorOutputs() noexcept;

}  // namespace memarena::host
