// Parsing of "key:value,..." settings strings and their value types.
#include "common/config_parser.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "common/config_table.h"
#include "common/text.h"
#include "memarena/errors.h"

namespace memarena::common {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const char x = (a[i] >= 'A' && a[i] <= 'Z') ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    const char y = (b[i] >= 'A' && b[i] <= 'Z') ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

constexpr std::string_view kSizeForm =
    "a size: a whole number of bytes with an optional suffix B, K/KiB, M/MiB, G/GiB or "
    "T/TiB (e.g. 1048576, 512MiB, 8GiB)";

}  // namespace

std::size_t ParseSize(std::string_view key, std::string_view value) {
  value = Trim(value);
  unsigned long long number = 0;
  const char* first = value.data();
  const char* last = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(first, last, number);
  if (ec != std::errc() || ptr == first) {
    throw ConfigError(fmt::format("bad value '{}' for key '{}': expected {}", value, key,
                                  kSizeForm));
  }
  const std::string_view suffix = Trim(std::string_view(ptr, static_cast<std::size_t>(last - ptr)));
  // Characters, not pointers: a table of pointers is relocated at load, into RELRO, which the
  // drop-in keeps to two pages (override_footprint_test).
  struct Unit {
    char a[3], b[4];
    unsigned char shift;
  };
  static constexpr Unit kUnits[] = {{"", "b", 0},    {"k", "kib", 10}, {"m", "mib", 20},
                                    {"g", "gib", 30}, {"t", "tib", 40}, {"kb", "kb", 10},
                                    {"mb", "mb", 20}, {"gb", "gb", 30}};
  for (const Unit& unit : kUnits) {
    if (EqualsIgnoreCase(suffix, unit.a) || EqualsIgnoreCase(suffix, unit.b)) {
      if (unit.shift != 0 && number > (std::numeric_limits<std::size_t>::max() >> unit.shift)) {
        throw ConfigError(fmt::format("bad value '{}' for key '{}': the size overflows 64 bits",
                                      value, key));
      }
      const std::size_t bytes = static_cast<std::size_t>(number) << unit.shift;
      CheckSizeRange(key, bytes, 0);
      return bytes;
    }
  }
  throw ConfigError(fmt::format("bad value '{}' for key '{}': unknown suffix '{}'; expected {}",
                                value, key, suffix, kSizeForm));
}

void CheckSizeRange(std::string_view key, std::size_t bytes, std::size_t min) {
  if (bytes >= min && bytes <= kMaxConfigBytes) return;
  const std::string lower = min == 0   ? std::string("a size")
                            : min == 1 ? std::string("a positive size")
                                       : fmt::format("a size of at least {}", min);
  throw ConfigError(fmt::format(
      "bad value '{}' for key '{}': expected {} of at most 256TiB ({} bytes, the largest "
      "address space a request could use)",
      bytes, key, lower, kMaxConfigBytes));
}

double ParseRatio(std::string_view key, std::string_view value, double min_exclusive,
                  double max_inclusive) {
  value = Trim(value);
  double number = 0;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (ec != std::errc() || ptr != value.data() + value.size() || value.empty() ||
      !std::isfinite(number) || number <= min_exclusive || number > max_inclusive) {
    throw ConfigError(fmt::format("bad value '{}' for key '{}': expected a number in ({}, {}]",
                                  value, key, min_exclusive, max_inclusive));
  }
  return number;
}

bool ParseBool(std::string_view key, std::string_view value) {
  value = Trim(value);
  if (value == "1" || EqualsIgnoreCase(value, "true") || EqualsIgnoreCase(value, "on")) return true;
  if (value == "0" || EqualsIgnoreCase(value, "false") || EqualsIgnoreCase(value, "off")) {
    return false;
  }
  throw ConfigError(fmt::format("bad value '{}' for key '{}': expected 0 or 1 (or true/false)",
                                value, key));
}

long long ParseInteger(std::string_view key, std::string_view value, long long min,
                       long long max) {
  value = Trim(value);
  long long number = 0;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (ec != std::errc() || ptr != value.data() + value.size() || value.empty() || number < min ||
      number > max) {
    throw ConfigError(fmt::format("bad value '{}' for key '{}': expected a whole number in [{}, {}]",
                                  value, key, min, max));
  }
  return number;
}

std::string ShowSize(std::size_t bytes) {
  static constexpr struct {
    char suffix[4];  // not a pointer: no relocation (ParseSize's units)
    unsigned char shift;
  } kUnits[] = {{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
  for (const auto& unit : kUnits) {
    const std::size_t one = std::size_t{1} << unit.shift;
    if (bytes != 0 && bytes % one == 0) return fmt::format("{}{}", bytes / one, unit.suffix);
  }
  return fmt::format("{}", bytes);
}

std::string ShowBool(bool value) { return value ? "1" : "0"; }

std::string ShowNumber(double value) { return fmt::format("{}", value); }

std::string ShowText(const std::string& text) { return text.empty() ? "(none)" : text; }

std::string ParseText(std::string_view, std::string_view value) { return std::string(value); }

std::vector<Setting> SplitSettings(std::string_view text) {
  std::vector<Setting> settings;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    std::size_t sep = item.find(':');
    if (sep == std::string_view::npos) sep = item.find('=');
    Setting setting;
    setting.key = Trim(item.substr(0, sep));
    if (sep != std::string_view::npos) setting.value = Trim(item.substr(sep + 1));
    setting.has_value = !setting.value.empty();
    settings.push_back(setting);
  }
  return settings;
}

std::string UnknownKeyMessage(std::string_view what, std::string_view key,
                              std::string_view allowed_keys) {
  return fmt::format("{}: unknown key '{}'; allowed keys: {}", what, key, allowed_keys);
}

std::string MissingValueMessage(std::string_view what, std::string_view key,
                                std::string_view form, std::string_view help) {
  return fmt::format("{}: key '{}' has no value; write {}:{} ({})", what, key, key, form, help);
}

std::string MarkdownCell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

void ThrowIfAny(const std::vector<std::string>& errors) {
  if (errors.empty()) return;
  std::string text;
  for (const std::string& e : errors) text += fmt::format("{}{}", text.empty() ? "" : "\n", e);
  throw ConfigError(text);
}

}  // namespace memarena::common
