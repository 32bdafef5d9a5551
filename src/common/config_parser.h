// Table-driven parser for "key:value,key:value" settings strings (MEMARENA_CONF,
// ArenaConfig), after mimalloc's options table: each key has one row with what it
// accepts, and every error names the key and the allowed values.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace memarena::common {

// One accepted key. `apply` parses the value and stores it; it throws ConfigError (via
// the Parse* helpers below) when the value is bad.
struct ConfigKey {
  std::string_view key;
  std::string_view allowed;  // human text, e.g. "a size such as 512MiB or 8GiB"
  std::function<void(std::string_view value)> apply;
};

// Splits `text` on ',' into key:value pairs (spaces around either are ignored; '=' is
// accepted in place of ':') and applies each through `keys`. `what` names the source in
// messages (e.g. "MEMARENA_CONF"). Throws ConfigError on an unknown key, a missing
// value or a bad value.
void ParseConfigString(std::string_view text, std::span<const ConfigKey> keys,
                       std::string_view what);

// The largest size any size key accepts: 256 TiB, the x86-64 and AArch64 user address
// space. Below it, rounding a size up to a page, a granule or a power of two, and doubling
// it, stay far inside 64 bits; above it no request could be backed anyway.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 48;

// Value parsers; each throws ConfigError naming `key` and the allowed form. ParseSize
// rejects sizes above kMaxConfigBytes, naming the allowed range.
std::size_t ParseSize(std::string_view key, std::string_view value);

// Throws ConfigError naming `key` and the range [min, kMaxConfigBytes] unless `bytes` is
// in it: for sizes set in code rather than parsed.
void CheckSizeRange(std::string_view key, std::size_t bytes, std::size_t min);
double ParseRatio(std::string_view key, std::string_view value, double min_exclusive,
                  double max_inclusive);
bool ParseBool(std::string_view key, std::string_view value);
long long ParseInteger(std::string_view key, std::string_view value, long long min,
                       long long max);

// "ceiling, release_threshold_ratio, ..." for messages.
std::string ListKeys(std::span<const ConfigKey> keys);

}  // namespace memarena::common
