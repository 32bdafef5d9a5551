// The files the monitor refreshes each interval and the drop-in writes at exit: the heap
// profile and the Prometheus textfile named in MEMARENA_CONF (or by SetMonitorOutputs).
#pragma once

#include <string>

namespace memarena::host {

// Paths to refresh; empty means none. "%p" in either becomes the pid.
void SetMonitorOutputs(std::string heap_profile, std::string prometheus_file);

// Writes both files if set; a failure is reported on stderr, not thrown. Only in the
// process that set them (see prometheus_file.cc).
void WriteMonitorOutputs() noexcept;

// The drop-in's exit write: in the process that set the outputs, stops the monitor thread
// first (one still running would rewrite the files after this write), then writes them. A
// forked child touches neither the monitor nor its locks, which a thread that no longer
// exists there may have held at the fork.
void WriteMonitorOutputsAtExit() noexcept;

}  // namespace memarena::host
