// HtmlReport: a self-contained report page (inline CSS and SVG, no scripts, no external
// files) that is also well-formed XML, so tests can parse it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace memarena::tools {

class HtmlReport {
 public:
  explicit HtmlReport(std::string_view title);

  void Heading(std::string_view text);
  void Paragraph(std::string_view text);
  // A table; every row has as many cells as `header`.
  void Table(const std::vector<std::string>& header,
             const std::vector<std::vector<std::string>>& rows);
  // An SVG element from SvgWriter (or RenderLineChart / RenderPlanSvg), embedded as is.
  void Svg(std::string_view svg);

  std::string Finish();

 private:
  std::string body_;
  std::string title_;
};

// Writes `content` to `path`; throws std::runtime_error naming the path on failure.
void WriteTextFile(const std::string& path, std::string_view content);

}  // namespace memarena::tools
