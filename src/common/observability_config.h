// Value parsers for the observability keys of MEMARENA_CONF (watermark levels, durations)
// and the "%p" path expansion shared by every per-process output file.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace memarena::common {

// "10s", "500ms", "2m", "1h" (a bare number is seconds). Throws ConfigError naming `key`.
std::chrono::milliseconds ParseDuration(std::string_view key, std::string_view value);

// `path` with each "%p" replaced by `pid`.
std::string ExpandPidPattern(std::string_view path, int pid);

}  // namespace memarena::common
