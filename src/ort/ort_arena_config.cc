// OrtArenaCfg <-> ArenaConfig: ORT's arena settings (CreateArenaCfgV2 keys) carry over one
// to one, since ArenaConfig has OrtArenaCfg's fields, meanings and defaults.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "memarena/errors.h"
#include "memarena/ort.h"

namespace memarena::ort {
namespace {

constexpr std::array<std::string_view, 6> kOrtArenaCfgKeys = {"max_mem",
                                                              "arena_extend_strategy",
                                                              "initial_chunk_size_bytes",
                                                              "max_dead_bytes_per_chunk",
                                                              "initial_growth_chunk_size_bytes",
                                                              "max_power_of_two_extend_bytes"};

std::string AllowedKeys() { return fmt::format("{}", fmt::join(kOrtArenaCfgKeys, ", ")); }

}  // namespace

ArenaConfig ArenaConfigFromOrtArenaCfg(std::span<const OrtArenaCfgEntry> entries) {
  // Build ArenaConfig's own "key:value" text so its parser and Validate() judge the values.
  std::string text;
  for (const OrtArenaCfgEntry& entry : entries) {
    if (std::find(kOrtArenaCfgKeys.begin(), kOrtArenaCfgKeys.end(), entry.key) ==
        kOrtArenaCfgKeys.end()) {
      throw ConfigError(fmt::format("OrtArenaCfg: unknown key '{}': allowed keys are {}", entry.key,
                                    AllowedKeys()));
    }
    if (entry.value == -1) continue;  // ORT's "use the default"
    if (entry.value < 0) {
      throw ConfigError(fmt::format(
          "OrtArenaCfg: bad value {} for key '{}': expected a non-negative number or -1 (default)",
          entry.value, entry.key));
    }
    text += fmt::format("{}{}:{}", text.empty() ? "" : ",", entry.key, entry.value);
  }
  try {
    return ArenaConfig::Parse(text);
  } catch (const ConfigError& error) {
    throw ConfigError(fmt::format("OrtArenaCfg: {}", error.what()));
  }
}

std::vector<OrtArenaCfgEntry> OrtArenaCfgFromArenaConfig(const ArenaConfig& config) {
  const auto number = [](std::size_t value) { return static_cast<std::int64_t>(value); };
  return {
      {"max_mem", number(config.max_mem)},
      {"arena_extend_strategy",
       config.arena_extend_strategy == ArenaExtendStrategy::kNextPowerOfTwo ? 0 : 1},
      {"initial_chunk_size_bytes", number(config.initial_chunk_size_bytes)},
      {"max_dead_bytes_per_chunk", number(config.max_dead_bytes_per_chunk)},
      {"initial_growth_chunk_size_bytes", number(config.initial_growth_chunk_size_bytes)},
      {"max_power_of_two_extend_bytes", number(config.max_power_of_two_extend_bytes)},
  };
}

}  // namespace memarena::ort
