// The pictures: a byte-valued line chart (timelines of in use, held and ceiling with release
// and OOM markers; compare overlays) and the plan picture (tensors as time x offset boxes).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "memarena/planner.h"
#include "replay.h"

namespace memarena::tools {

struct ChartSeries {
  std::string label;
  std::string color;
  std::vector<std::pair<double, double>> points;  // (x, bytes), x ascending
  std::string dash;                                // SVG dasharray; empty = solid
};

struct ChartMarkers {
  std::string label;
  std::string color;
  std::string shape;  // "down" (drawn along the top) or "cross" (drawn at y)
  std::vector<std::pair<double, double>> points;  // (x, bytes)
  std::vector<std::string> tooltips;              // one per point, may be empty
  std::size_t count = 0;  // events the legend reports (more than drawn when thinned)
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::vector<ChartSeries> series;
  std::vector<ChartMarkers> markers;
  double width = 960;
  double height = 340;
};

// An SVG of `chart` with a bytes y axis starting at 0 and a legend.
std::string RenderLineChart(const LineChart& chart);

// In use (blue), held (orange) and the limit (red dashed, when there is one) against replay
// events, with releases (green triangles) and OOMs (red crosses) marked.
LineChart TimelineChart(const ReplayResult& result, const std::string& title);

// Held over events for each result, plus in use of the first, in one chart.
LineChart CompareChart(const std::vector<ReplayResult>& results, const std::string& title);

// Tensors as boxes: x = lifetime [lower, upper), y = [offset, offset + size); a dashed line at
// the lower bound and a solid one at the arena size.
std::string RenderPlanSvg(const std::vector<PlanTensor>& tensors, const Plan& plan,
                          const std::string& title);

}  // namespace memarena::tools
