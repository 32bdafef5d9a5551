// Chart rendering on top of SvgWriter: axes, scaling, legends and the plan picture.
#include "charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "memarena/stats.h"
#include "svg.h"

namespace memarena::tools {
namespace {

constexpr double kLeft = 90, kRight = 20, kTop = 36, kBottom = 64;

// The plot area and the data-to-pixel mapping shared by both chart kinds.
struct Frame {
  double width, height, x_max, y_max;
  double X(double x) const { return kLeft + x / x_max * (width - kLeft - kRight); }
  double Y(double y) const { return height - kBottom - y / y_max * (height - kTop - kBottom); }
};

// A round number >= value (1, 2 or 5 times a power of ten, or a power of two for bytes) so
// the axis ticks land on readable values.
double NiceCeiling(double value, bool bytes) {
  if (value <= 0) return 1;
  if (bytes) {
    double p = 1;
    while (p < value) p *= 2;
    // Powers of two make sparse ticks near 2^k + 1; a quarter step above is enough.
    const double quarter = p / 4;
    return std::ceil(value / quarter) * quarter;
  }
  const double mag = std::pow(10.0, std::floor(std::log10(value)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= value) return m * mag;
  }
  return 10 * mag;
}

std::string CountLabel(double v) {
  if (v >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.3g}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

void DrawAxes(SvgWriter& svg, const Frame& f, const std::string& title, const std::string& x_label,
              bool y_bytes) {
  svg.Rect(0, 0, f.width, f.height, "#ffffff");
  svg.Text(kLeft, 22, title, 15, "start", "#111");
  constexpr int kTicks = 4;
  for (int i = 0; i <= kTicks; ++i) {
    const double yv = f.y_max * i / kTicks;
    const double y = f.Y(yv);
    svg.Line(kLeft, y, f.width - kRight, y, i == 0 ? "#444" : "#e4e4e4");
    svg.Text(kLeft - 6, y + 4, y_bytes ? FormatBytes(static_cast<std::size_t>(yv)) : CountLabel(yv),
             11, "end", "#444");
    const double xv = f.x_max * i / kTicks;
    const double x = f.X(xv);
    svg.Line(x, f.height - kBottom, x, f.height - kBottom + 4, "#444");
    svg.Text(x, f.height - kBottom + 17, CountLabel(xv), 11, "middle", "#444");
  }
  svg.Line(kLeft, kTop, kLeft, f.height - kBottom, "#444");
  svg.Text((kLeft + f.width - kRight) / 2, f.height - kBottom + 34, x_label, 12, "middle", "#444");
}

}  // namespace

std::string RenderLineChart(const LineChart& chart) {
  double x_max = 1, y_max = 1;
  for (const auto& s : chart.series) {
    for (const auto& [x, y] : s.points) {
      x_max = std::max(x_max, x);
      y_max = std::max(y_max, y);
    }
  }
  for (const auto& m : chart.markers) {
    for (const auto& [x, y] : m.points) x_max = std::max(x_max, x);
  }
  const Frame f{chart.width, chart.height, x_max, NiceCeiling(y_max * 1.05, true)};
  SvgWriter svg(chart.width, chart.height);
  DrawAxes(svg, f, chart.title, chart.x_label, true);
  for (const auto& s : chart.series) {
    std::vector<std::pair<double, double>> px;
    px.reserve(s.points.size());
    for (const auto& [x, y] : s.points) px.emplace_back(f.X(x), f.Y(y));
    svg.Polyline(px, s.color, 1.6, s.dash);
  }
  for (const auto& m : chart.markers) {
    for (std::size_t i = 0; i < m.points.size(); ++i) {
      const auto [x, y] = m.points[i];
      const double py = m.shape == "down" ? kTop + 2 : f.Y(y);
      svg.Marker(f.X(x), py, m.shape, m.color, i < m.tooltips.size() ? m.tooltips[i] : "");
    }
  }
  // Legend along the bottom: series first, then marker kinds that occur.
  double lx = kLeft;
  const double ly = chart.height - 12;
  for (const auto& s : chart.series) {
    svg.Line(lx, ly - 4, lx + 22, ly - 4, s.color, 2.5, s.dash);
    svg.Text(lx + 27, ly, s.label, 11);
    lx += 37 + 6.2 * static_cast<double>(s.label.size());
  }
  for (const auto& m : chart.markers) {
    if (m.points.empty()) continue;
    svg.Marker(lx + 6, ly - 4, m.shape, m.color);
    const std::string text = fmt::format("{} ({})", m.label, std::max(m.count, m.points.size()));
    svg.Text(lx + 16, ly, text, 11);
    lx += 26 + 6.2 * static_cast<double>(text.size());
  }
  return svg.Finish();
}

LineChart TimelineChart(const ReplayResult& r, const std::string& title) {
  LineChart chart;
  chart.title = title;
  chart.x_label = "allocation events replayed";
  ChartSeries in_use{"in use", "#1f77b4", {}, ""};
  ChartSeries held{"held", "#ff7f0e", {}, ""};
  for (const auto& p : r.timeline) {
    in_use.points.emplace_back(static_cast<double>(p.event), static_cast<double>(p.in_use));
    held.points.emplace_back(static_cast<double>(p.event), static_cast<double>(p.held));
  }
  chart.series = {held, in_use};
  if (r.limit_bytes != 0) {
    const double limit = static_cast<double>(r.limit_bytes);
    chart.series.push_back(
        {fmt::format("ceiling {}", FormatBytes(r.limit_bytes)), "#d62728",
         {{0.0, limit}, {static_cast<double>(std::max<std::size_t>(r.events, 1)), limit}}, "6,4"});
  }
  ChartMarkers releases{"release", "#2ca02c", "down", {}, {}, 0};
  ChartMarkers ooms{"OOM", "#d62728", "cross", {}, {}, 0};
  // Hundreds of markers would merge into a bar: draw at most kMaxMarkers of each kind,
  // evenly spread, and give the full count in the legend.
  constexpr std::size_t kMaxMarkers = 80;
  std::size_t num_releases = 0;
  for (const auto& m : r.marks) num_releases += m.kind == ReplayMark::Kind::kRelease;
  const std::size_t num_ooms = r.marks.size() - num_releases;
  releases.count = num_releases;
  ooms.count = num_ooms;
  std::size_t seen_releases = 0, seen_ooms = 0;
  for (const auto& m : r.marks) {
    const bool release = m.kind == ReplayMark::Kind::kRelease;
    const std::size_t index = release ? seen_releases++ : seen_ooms++;
    const std::size_t total = release ? num_releases : num_ooms;
    if (total > kMaxMarkers && index * kMaxMarkers / total == (index + 1) * kMaxMarkers / total) continue;
    // Place an OOM cross on the held line at that event.
    std::size_t held_now = 0;
    for (const auto& p : r.timeline) {
      if (p.event <= m.event) held_now = p.held;
    }
    if (release) {
      releases.points.emplace_back(static_cast<double>(m.event), 0.0);
      releases.tooltips.push_back(
          fmt::format("release after event {}: {} returned", m.event, FormatBytes(m.bytes)));
    } else {
      ooms.points.emplace_back(static_cast<double>(m.event), static_cast<double>(held_now));
      ooms.tooltips.push_back(
          fmt::format("OOM at event {}: {} requested", m.event, FormatBytes(m.bytes)));
    }
  }
  chart.markers = {releases, ooms};
  return chart;
}

LineChart CompareChart(const std::vector<ReplayResult>& results, const std::string& title) {
  static constexpr std::array<const char*, 8> kColors = {
      "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
  LineChart chart;
  chart.title = title;
  chart.x_label = "allocation events replayed (lines: held per allocator)";
  for (std::size_t i = 0; i < results.size(); ++i) {
    ChartSeries s{"held: " + results[i].allocator, kColors[i % kColors.size()], {}, ""};
    for (const auto& p : results[i].timeline) {
      s.points.emplace_back(static_cast<double>(p.event), static_cast<double>(p.held));
    }
    chart.series.push_back(std::move(s));
  }
  if (!results.empty()) {
    ChartSeries in_use{"in use (" + results.front().allocator + ")", "#1f77b4", {}, "3,3"};
    for (const auto& p : results.front().timeline) {
      in_use.points.emplace_back(static_cast<double>(p.event), static_cast<double>(p.in_use));
    }
    chart.series.push_back(std::move(in_use));
  }
  return chart;
}

std::string RenderPlanSvg(const std::vector<PlanTensor>& tensors, const Plan& plan,
                          const std::string& title) {
  std::int64_t t_min = 0, t_max = 1;
  if (!tensors.empty()) {
    t_min = tensors.front().lower;
    t_max = tensors.front().upper;
  }
  for (const auto& t : tensors) {
    t_min = std::min(t_min, t.lower);
    t_max = std::max(t_max, t.upper);
  }
  const double span = static_cast<double>(std::max<std::int64_t>(1, t_max - t_min));
  const double top = NiceCeiling(static_cast<double>(std::max(plan.arena_size, plan.lower_bound)) * 1.05, true);
  const Frame f{960, 480, span, top};
  SvgWriter svg(f.width, f.height);
  DrawAxes(svg, f, title, "time step (lifetime [lower, upper))", true);
  for (std::size_t i = 0; i < tensors.size() && i < plan.offsets.size(); ++i) {
    const PlanTensor& t = tensors[i];
    const double x0 = f.X(static_cast<double>(t.lower - t_min));
    const double x1 = f.X(static_cast<double>(t.upper - t_min));
    const double y0 = f.Y(static_cast<double>(plan.offsets[i] + t.size));
    const double y1 = f.Y(static_cast<double>(plan.offsets[i]));
    // Hue from the index so neighbours differ; fixed saturation keeps text readable.
    const std::string fill = fmt::format("hsl({},60%,70%)", (i * 47) % 360);
    svg.Rect(x0, y0, std::max(0.5, x1 - x0), std::max(0.5, y1 - y0), fill, "#333",
             fmt::format("{}: {} at offset {}, live [{}, {})", t.id, FormatBytes(t.size),
                         plan.offsets[i], t.lower, t.upper));
  }
  const double lb = f.Y(static_cast<double>(plan.lower_bound));
  const double arena = f.Y(static_cast<double>(plan.arena_size));
  svg.Line(kLeft, arena, f.width - kRight, arena, "#111", 1.5);
  svg.Line(kLeft, lb, f.width - kRight, lb, "#d62728", 2, "8,4");
  svg.Text(f.width - kRight - 4, arena - 5, fmt::format("arena {}", FormatBytes(plan.arena_size)),
           11, "end", "#111");
  svg.Text(f.width - kRight - 4, lb + 14,
           fmt::format("lower bound {}", FormatBytes(plan.lower_bound)), 11, "end", "#d62728");
  return svg.Finish();
}

}  // namespace memarena::tools
