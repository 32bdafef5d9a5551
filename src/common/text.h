// Small string_view helpers shared by every text format memarena reads (config strings,
// RMM trace logs, MiniMalloc CSV files).
#pragma once

#include <string_view>
#include <vector>

namespace memarena::common {

// `s` without leading and trailing spaces, tabs, CR and LF.
inline std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const std::size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

// Splits one CSV line on commas (the formats we read have no quoting); fields are trimmed.
inline std::vector<std::string_view> SplitCsvFields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(Trim(line.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

}  // namespace memarena::common
