// Applies MEMARENA_CONF's observability keys in the drop-in (watermarks, monitor_interval,
// heap_profile, prometheus_file); see docs/observability.md.
#pragma once

#include "common/memarena_conf.h"

namespace memarena::dropin {

// Called once at load, after the host keys were applied. Throws what SetWatermarks and
// StartMonitor throw.
void ConfigureObservability(const common::DropinConfig& config);

}  // namespace memarena::dropin
