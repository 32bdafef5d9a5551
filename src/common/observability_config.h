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

// Whether process `pid` may write the output file `path` that process `owner_pid` was
// configured with: a path with "%p" names each process's own file; one without is the
// configuring process's, and a forked child (its own pid, its parent's configuration) that
// wrote it at exit would replace the parent's figures with its own.
bool MayWriteOutput(std::string_view path, long owner_pid, long pid) noexcept;

}  // namespace memarena::common
