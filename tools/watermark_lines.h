// The watermark levels on a replay's timeline: a dashed line per level across the chart and
// a mark where held crossed it upward (re-armed, as the library does, only after held fell
// below the level by the hysteresis).
#pragma once

#include <vector>

#include "charts.h"
#include "replay.h"

namespace memarena::tools {

// Adds the lines and crossing marks of `levels` (fractions of result.limit_bytes) to
// `chart`. Nothing when there is no limit or no level.
void AddWatermarkLines(LineChart& chart, const ReplayResult& result,
                       const std::vector<double>& levels);

}  // namespace memarena::tools
