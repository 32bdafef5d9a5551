// HtmlReport: the page skeleton, tables and file output of the reports.
#include "html_report.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "svg.h"

namespace memarena::tools {

HtmlReport::HtmlReport(std::string_view title) : title_(title) {}

void HtmlReport::Heading(std::string_view text) {
  body_ += fmt::format("<h2>{}</h2>\n", XmlEscape(text));
}

void HtmlReport::Paragraph(std::string_view text) {
  body_ += fmt::format("<p>{}</p>\n", XmlEscape(text));
}

void HtmlReport::Table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table>\n<tr>";
  for (const auto& h : header) body_ += fmt::format("<th>{}</th>", XmlEscape(h));
  body_ += "</tr>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const auto& cell : row) body_ += fmt::format("<td>{}</td>", XmlEscape(cell));
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void HtmlReport::Svg(std::string_view svg) {
  body_ += "<div class=\"chart\">\n";
  body_ += svg;
  body_ += "</div>\n";
}

std::string HtmlReport::Finish() {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      "<title>{0}</title>\n<style>\n"
      "body {{ font-family: sans-serif; margin: 24px; color: #222; max-width: 1000px; }}\n"
      "table {{ border-collapse: collapse; margin: 8px 0 16px 0; font-size: 13px; }}\n"
      "th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; }}\n"
      "th {{ background: #f3f3f3; }}\n"
      "td:first-child, th:first-child {{ text-align: left; }}\n"
      ".chart {{ margin: 8px 0 24px 0; }}\n"
      "</style>\n</head>\n<body>\n<h1>{0}</h1>\n{1}</body>\n</html>\n",
      XmlEscape(title_), body_);
}

void WriteTextFile(const std::string& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
}

}  // namespace memarena::tools
