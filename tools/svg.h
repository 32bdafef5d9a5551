// SvgWriter: builds a standalone, well-formed SVG element (also valid XML inside XHTML), the
// one place that writes SVG markup and escapes text for it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memarena::tools {

// &, <, >, " and ' as entities, so any text is safe in XML content and attributes.
std::string XmlEscape(std::string_view text);

class SvgWriter {
 public:
  SvgWriter(double width, double height);

  void Rect(double x, double y, double w, double h, std::string_view fill,
            std::string_view stroke = "none", std::string_view tooltip = {});
  void Line(double x1, double y1, double x2, double y2, std::string_view stroke,
            double stroke_width = 1.0, std::string_view dash = {});
  void Polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke,
                double stroke_width = 1.5, std::string_view dash = {});
  // anchor: start, middle or end.
  void Text(double x, double y, std::string_view text, double size = 12,
            std::string_view anchor = "start", std::string_view fill = "#222");
  // A small marker shape centred on (x, y): "down" triangle or "cross".
  void Marker(double x, double y, std::string_view shape, std::string_view color,
              std::string_view tooltip = {});

  // Closes the element and returns it; the writer is empty afterwards.
  std::string Finish();

 private:
  std::string out_;
};

}  // namespace memarena::tools
