// AddWatermarkLines: levels as dashed lines, crossings found in the sampled timeline.
#include "watermark_lines.h"

#include <fmt/format.h>

#include <algorithm>

#include "memarena/observability.h"
#include "memarena/stats.h"

namespace memarena::tools {

void AddWatermarkLines(LineChart& chart, const ReplayResult& r, const std::vector<double>& levels) {
  if (r.limit_bytes == 0 || levels.empty()) return;
  const double limit = static_cast<double>(r.limit_bytes);
  const double end = static_cast<double>(std::max<std::size_t>(r.events, 1));
  ChartMarkers crossings{"watermark crossed", "#9467bd", "cross", {}, {}, 0};
  for (const double level : levels) {
    const double bytes = level * limit;
    chart.series.push_back({fmt::format("watermark {:.0f}%", level * 100.0), "#9467bd",
                            {{0.0, bytes}, {end, bytes}}, "2,3"});
    bool fired = false;
    for (const TimelinePoint& p : r.timeline) {
      const double held = static_cast<double>(p.held);
      if (!fired && held >= bytes) {
        fired = true;
        crossings.points.emplace_back(static_cast<double>(p.event), bytes);
        crossings.tooltips.push_back(fmt::format("watermark {:.0f}% crossed by event {}: held {}",
                                                 level * 100.0, p.event, FormatBytes(p.held)));
      } else if (fired && held < (level - kDefaultWatermarkHysteresis) * limit) {
        fired = false;
      }
    }
  }
  crossings.count = crossings.points.size();
  chart.markers.push_back(std::move(crossings));
}

}  // namespace memarena::tools
