// ArenaConfig: OrtArenaCfg's keys parsed from "key:value,..." strings and the environment.
#include <fmt/format.h>

#include <array>

#include "common/config_parser.h"
#include "memarena/arena.h"
#include "memarena/errors.h"
#include "platform/os.h"

namespace memarena {
namespace {

constexpr std::string_view kStrategyAllowed = "kNextPowerOfTwo or kSameAsRequested (or 0 or 1 as in ORT)";

ArenaExtendStrategy ParseStrategy(std::string_view value) {
  if (value == "kNextPowerOfTwo" || value == "0") return ArenaExtendStrategy::kNextPowerOfTwo;
  if (value == "kSameAsRequested" || value == "1") return ArenaExtendStrategy::kSameAsRequested;
  throw ConfigError(fmt::format("bad value '{}' for key 'arena_extend_strategy': expected {}",
                                value, kStrategyAllowed));
}

std::array<common::ConfigKey, 8> ArenaKeys(ArenaConfig& c) {
  auto size_key = [](std::string_view key, std::string_view allowed, std::size_t& field) {
    return common::ConfigKey{key, allowed,
                             [key, &field](std::string_view v) { field = common::ParseSize(key, v); }};
  };
  return {{
      size_key("max_mem", "a size such as 8GiB (0 = unlimited)", c.max_mem),
      {"arena_extend_strategy", kStrategyAllowed,
       [&c](std::string_view v) { c.arena_extend_strategy = ParseStrategy(v); }},
      size_key("initial_chunk_size_bytes", "a positive size such as 1MiB", c.initial_chunk_size_bytes),
      size_key("max_dead_bytes_per_chunk", "a size such as 128MiB", c.max_dead_bytes_per_chunk),
      size_key("initial_growth_chunk_size_bytes", "a positive size such as 2MiB",
               c.initial_growth_chunk_size_bytes),
      size_key("max_power_of_two_extend_bytes", "a size of at least 256 such as 1GiB",
               c.max_power_of_two_extend_bytes),
      {"expandable_segments", "0 or 1",
       [&c](std::string_view v) { c.expandable_segments = common::ParseBool("expandable_segments", v); }},
      size_key("expandable_decommit_threshold", "a size such as 16MiB (0 = decommit whenever memory is added)",
               c.expandable_decommit_threshold),
  }};
}

}  // namespace

void ArenaConfig::Validate() const {
  // Every size stays at most kMaxConfigBytes, so rounding a chunk up to a power of two and
  // doubling the next extension cannot wrap (a wrapped growth size made the extension loop
  // spin forever under the arena lock).
  common::CheckSizeRange("max_mem", max_mem, 0);
  common::CheckSizeRange("initial_chunk_size_bytes", initial_chunk_size_bytes, 1);
  common::CheckSizeRange("max_dead_bytes_per_chunk", max_dead_bytes_per_chunk, 0);
  common::CheckSizeRange("initial_growth_chunk_size_bytes", initial_growth_chunk_size_bytes, 1);
  common::CheckSizeRange("max_power_of_two_extend_bytes", max_power_of_two_extend_bytes, 256);
}

ArenaConfig ArenaConfig::Parse(std::string_view text) {
  ArenaConfig config;
  const auto keys = ArenaKeys(config);
  common::ParseConfigString(text, keys, "ArenaConfig");
  try {
    config.Validate();
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("ArenaConfig: {}", e.what()));
  }
  return config;
}

ArenaConfig ArenaConfig::FromEnvironment(const char* variable) {
  const char* text = platform::GetEnv(variable);
  if (text == nullptr) return ArenaConfig{};
  try {
    return Parse(text);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", variable, e.what()));
  }
}

std::string_view ArenaConfigHelp() noexcept {
  return "ArenaConfig keys (OrtArenaCfg names), key:value,...:\n"
         "  max_mem:SIZE                          limit on held bytes (0 = unlimited, default)\n"
         "  arena_extend_strategy:S               kNextPowerOfTwo (default) | kSameAsRequested\n"
         "  initial_chunk_size_bytes:SIZE         first region under kNextPowerOfTwo (1MiB)\n"
         "  max_dead_bytes_per_chunk:SIZE         split a free chunk when this much is left (128MiB)\n"
         "  initial_growth_chunk_size_bytes:SIZE  growth restarts here after a shrink (2MiB)\n"
         "  max_power_of_two_extend_bytes:SIZE    kNextPowerOfTwo stops doubling here (1GiB)\n"
         "  expandable_segments:0|1               one growing virtual range, granules committed and\n"
         "                                        decommitted on demand (0; needs a virtual-memory source)\n"
         "  expandable_decommit_threshold:SIZE    expandable: decommit free granules when held would\n"
         "                                        exceed in use by more than this (16MiB)\n"
         "SIZE takes B, K/KiB, M/MiB, G/GiB or T/TiB.";
}

}  // namespace memarena
