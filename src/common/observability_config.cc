// MEMARENA_CONF values of the observability keys: watermark levels ("75/88/95"), durations
// ("10s"), and "%p" in output paths.
#include "common/observability_config.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

#include "common/text.h"
#include "memarena/errors.h"
#include "memarena/observability.h"

namespace memarena {
namespace common {

std::chrono::milliseconds ParseDuration(std::string_view key, std::string_view value) {
  const std::string_view text = Trim(value);
  double number = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  double scale = 0.0;
  if (unit.empty() || unit == "s") scale = 1000.0;
  if (unit == "ms") scale = 1.0;
  if (unit == "m" || unit == "min") scale = 60'000.0;
  if (unit == "h") scale = 3'600'000.0;
  const double millis = number * scale;
  if (error != std::errc() || scale == 0.0 || !(millis >= 1.0) || millis > 1e12) {
    throw ConfigError(fmt::format(
        "bad value '{}' for key '{}': expected a positive duration of at least 1ms such as "
        "500ms, 10s, 5m or 1h (a bare number is seconds)", value, key));
  }
  return std::chrono::milliseconds(static_cast<long long>(millis));
}

std::string ExpandPidPattern(std::string_view path, int pid) {
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'p') {
      out += std::to_string(pid);
      ++i;
    } else {
      out += path[i];
    }
  }
  return out;
}

bool MayWriteOutput(std::string_view path, long owner_pid, long pid) noexcept {
  return pid == owner_pid || path.find("%p") != std::string_view::npos;
}

}  // namespace common

std::vector<double> ParseWatermarkLevels(std::string_view key, std::string_view text) {
  std::vector<double> levels;
  std::string_view rest = common::Trim(text);
  const auto bad = [&](std::string_view why) {
    return ConfigError(fmt::format(
        "bad value '{}' for key '{}' ({}): expected ascending percentages of the limit in "
        "(0, 100] separated by '/', e.g. 75/88/95", text, key, why));
  };
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    const std::string_view part = common::Trim(rest.substr(0, slash));
    double percent = 0.0;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), percent);
    if (error != std::errc() || end != part.data() + part.size()) throw bad("not a number");
    if (!(percent > 0.0 && percent <= 100.0)) throw bad("a level outside (0, 100]");
    if (!levels.empty() && percent / 100.0 <= levels.back()) throw bad("not ascending");
    levels.push_back(percent / 100.0);
    rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
  }
  if (levels.empty()) throw bad("no level");
  return levels;
}

}  // namespace memarena
