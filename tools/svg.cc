// SvgWriter: SVG primitives with fixed-precision coordinates and escaped text.
#include "svg.h"

#include <fmt/format.h>

namespace memarena::tools {

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {
std::string Title(std::string_view tooltip) {
  return tooltip.empty() ? std::string() : fmt::format("<title>{}</title>", XmlEscape(tooltip));
}
std::string DashAttr(std::string_view dash) {
  return dash.empty() ? std::string() : fmt::format(" stroke-dasharray=\"{}\"", dash);
}
}  // namespace

SvgWriter::SvgWriter(double width, double height) {
  out_ = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\">\n",
      width, height);
}

void SvgWriter::Rect(double x, double y, double w, double h, std::string_view fill,
                     std::string_view stroke, std::string_view tooltip) {
  const std::string title = Title(tooltip);
  out_ += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\" stroke=\"{}\" "
      "stroke-width=\"0.5\"{}\n",
      x, y, w, h, fill, stroke, title.empty() ? "/>" : fmt::format(">{}</rect>", title));
}

void SvgWriter::Line(double x1, double y1, double x2, double y2, std::string_view stroke,
                     double stroke_width, std::string_view dash) {
  out_ += fmt::format(
      "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
      "stroke-width=\"{:.1f}\"{}/>\n",
      x1, y1, x2, y2, stroke, stroke_width, DashAttr(dash));
}

void SvgWriter::Polyline(const std::vector<std::pair<double, double>>& points,
                         std::string_view stroke, double stroke_width, std::string_view dash) {
  if (points.empty()) return;
  out_ += "<polyline fill=\"none\" points=\"";
  for (const auto& [x, y] : points) out_ += fmt::format("{:.1f},{:.1f} ", x, y);
  out_ += fmt::format("\" stroke=\"{}\" stroke-width=\"{:.1f}\" stroke-linejoin=\"round\"{}/>\n",
                      stroke, stroke_width, DashAttr(dash));
}

void SvgWriter::Text(double x, double y, std::string_view text, double size,
                     std::string_view anchor, std::string_view fill) {
  out_ += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{:.0f}\" text-anchor=\"{}\" fill=\"{}\">{}</text>\n",
      x, y, size, anchor, fill, XmlEscape(text));
}

void SvgWriter::Marker(double x, double y, std::string_view shape, std::string_view color,
                       std::string_view tooltip) {
  const std::string title = Title(tooltip);
  if (shape == "cross") {
    out_ += fmt::format(
        "<path d=\"M{0:.1f},{1:.1f} l8,8 m0,-8 l-8,8\" stroke=\"{2}\" stroke-width=\"2\" "
        "fill=\"none\">{3}</path>\n",
        x - 4, y - 4, color, title);
  } else {
    out_ += fmt::format(
        "<path d=\"M{0:.1f},{1:.1f} l10,0 l-5,8 z\" fill=\"{2}\" stroke=\"none\">{3}</path>\n",
        x - 5, y - 4, color, title);
  }
}

std::string SvgWriter::Finish() {
  std::string done = std::move(out_);
  done += "</svg>\n";
  out_.clear();
  return done;
}

}  // namespace memarena::tools
