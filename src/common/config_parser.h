// Value parsers of "key:value,key:value" settings strings (MEMARENA_CONF, ArenaConfig):
// sizes, ratios, booleans, integers; every error names the key and the allowed values.
// The tables of keys are config_table.h.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace memarena::common {

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

}  // namespace memarena::common
