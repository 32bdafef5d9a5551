// MiniMalloc-format CSV: id,lower,upper,size[,alignment][,offset], half-open lifetimes.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <istream>
#include <ostream>
#include <stdexcept>

#include "common/text.h"
#include "memarena/planner.h"
#include "planner/tensor_checks.h"

namespace memarena {
namespace {

using common::SplitCsvFields;
using common::Trim;

[[noreturn]] void Fail(std::size_t line, std::string_view what) {
  throw std::invalid_argument(fmt::format("memarena planner CSV line {}: {}", line, what));
}

template <typename T>
T ParseNumber(std::string_view text, std::size_t line, std::string_view column) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    if (text.starts_with('-') && std::is_unsigned_v<T>) {
      Fail(line, fmt::format("{} '{}' is negative; it must be a non-negative integer", column,
                             text));
    }
    Fail(line, fmt::format("{} '{}' is not an integer{}", column, text,
                           ec == std::errc::result_out_of_range ? " in range" : ""));
  }
  return value;
}

}  // namespace

PlanCsv ReadPlanCsv(std::istream& in) {
  enum Column { kId, kLower, kUpper, kSize, kAlignment, kOffset, kNumColumns };
  static constexpr std::string_view kNames[kNumColumns] = {"id",   "lower",     "upper",
                                                           "size", "alignment", "offset"};
  std::string line;
  std::size_t line_number = 0;
  std::vector<int> where(kNumColumns, -1);  // column -> field position
  std::size_t num_fields = 0;
  while (std::getline(in, line)) {  // the header: first non-empty line
    ++line_number;
    if (!Trim(line).empty()) break;
  }
  if (Trim(line).empty()) {
    Fail(std::max<std::size_t>(line_number, 1),
         "the file is empty; expected the header id,lower,upper,size");
  }
  const std::vector<std::string_view> header = SplitCsvFields(line);
  num_fields = header.size();
  for (std::size_t f = 0; f < header.size(); ++f) {
    bool known = false;
    for (int c = 0; c < kNumColumns; ++c) {
      if (header[f] == kNames[c]) {
        if (where[c] != -1) Fail(line_number, fmt::format("column '{}' appears twice", header[f]));
        where[c] = static_cast<int>(f);
        known = true;
      }
    }
    if (!known) {
      Fail(line_number, fmt::format("unknown column '{}'; expected id,lower,upper,size with "
                                    "optional alignment and offset",
                                    header[f]));
    }
  }
  for (int c : {kId, kLower, kUpper, kSize}) {
    if (where[c] == -1) {
      Fail(line_number, fmt::format("the header lacks the '{}' column (need id,lower,upper,size)",
                                    kNames[c]));
    }
  }
  PlanCsv csv;
  std::size_t total = 0;  // sizes plus alignments so far (see CheckTensor)
  if (where[kOffset] != -1) csv.offsets.emplace();
  while (std::getline(in, line)) {
    ++line_number;
    if (Trim(line).empty()) continue;
    const std::vector<std::string_view> fields = SplitCsvFields(line);
    if (fields.size() != num_fields) {
      Fail(line_number, fmt::format("{} fields where the header has {}", fields.size(), num_fields));
    }
    PlanTensor t;
    t.id = std::string(fields[where[kId]]);
    if (t.id.empty()) Fail(line_number, "empty id");
    t.lower = ParseNumber<std::int64_t>(fields[where[kLower]], line_number, "lower");
    t.upper = ParseNumber<std::int64_t>(fields[where[kUpper]], line_number, "upper");
    t.size = ParseNumber<std::size_t>(fields[where[kSize]], line_number, "size");
    if (where[kAlignment] != -1) {
      t.alignment = ParseNumber<std::size_t>(fields[where[kAlignment]], line_number, "alignment");
    }
    if (auto problem = planner::CheckTensor(t, total)) {
      Fail(line_number, fmt::format("{} (tensor '{}')", *problem, t.id));
    }
    if (csv.offsets) {
      const std::size_t offset =
          ParseNumber<std::size_t>(fields[where[kOffset]], line_number, "offset");
      if (offset > planner::kMaxPlanTotal) {
        Fail(line_number, fmt::format("offset {} of '{}' is too large: offsets may be at most {} "
                                      "so that offset + size cannot wrap",
                                      offset, t.id, planner::kMaxPlanTotal));
      }
      csv.offsets->push_back(offset);
    }
    csv.tensors.push_back(std::move(t));
  }
  return csv;
}

PlanCsv ReadPlanCsvFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::invalid_argument(fmt::format("memarena planner: cannot open CSV file '{}'", path));
  }
  try {
    return ReadPlanCsv(in);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", path, e.what()));
  }
}

std::size_t CapacityFromFileName(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const std::size_t last_dot = name.rfind('.');
  if (last_dot == std::string_view::npos) return 0;
  name = name.substr(0, last_dot);
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return 0;
  const std::string_view digits = name.substr(dot + 1);
  std::size_t capacity = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), capacity);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) return 0;
  return capacity;
}

void WritePlanCsv(std::ostream& out, const std::vector<PlanTensor>& tensors, const Plan* plan) {
  bool aligned = false;
  for (const PlanTensor& t : tensors) aligned = aligned || t.alignment > 1;
  std::string text = "id,lower,upper,size";
  if (aligned) text += ",alignment";
  if (plan != nullptr) text += ",offset";
  text += '\n';
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const PlanTensor& t = tensors[i];
    text += fmt::format("{},{},{},{}", t.id, t.lower, t.upper, t.size);
    if (aligned) text += fmt::format(",{}", t.alignment);
    if (plan != nullptr) text += fmt::format(",{}", plan->offsets.at(i));
    text += '\n';
  }
  out << text;
}

}  // namespace memarena
