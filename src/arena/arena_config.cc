// ArenaConfig: OrtArenaCfg's keys parsed from "key:value,..." strings and the environment.
#include <fmt/format.h>

#include <array>

#include "arena/arena_config_rows.h"
#include "common/config_table.h"
#include "memarena/arena.h"
#include "memarena/config_docs.h"
#include "memarena/errors.h"
#include "platform/os.h"

namespace memarena {
namespace {

ArenaExtendStrategy ParseStrategy(std::string_view key, std::string_view value) {
  if (value == "kNextPowerOfTwo" || value == "0") return ArenaExtendStrategy::kNextPowerOfTwo;
  if (value == "kSameAsRequested" || value == "1") return ArenaExtendStrategy::kSameAsRequested;
  throw ConfigError(fmt::format("bad value '{}' for key '{}': expected kNextPowerOfTwo or "
                                "kSameAsRequested (or 0 or 1 as in ORT)", value, key));
}

std::string ShowStrategy(ArenaExtendStrategy strategy) {
  return strategy == ArenaExtendStrategy::kNextPowerOfTwo ? "kNextPowerOfTwo" : "kSameAsRequested";
}

constexpr std::array kArenaRows = {
    common::SizeRow<&ArenaConfig::max_mem>(
        "max_mem", "limit on held bytes, ORT's bytes_limit (0 = unlimited)"),
    common::Row<&ArenaConfig::arena_extend_strategy, ParseStrategy, ShowStrategy>(
        "arena_extend_strategy", "kNextPowerOfTwo|kSameAsRequested",
        "how a region grows; 0 and 1 as in ORT"),
    common::SizeRow<&ArenaConfig::initial_chunk_size_bytes>(
        "initial_chunk_size_bytes", "first region under kNextPowerOfTwo (must be > 0)"),
    common::SizeRow<&ArenaConfig::max_dead_bytes_per_chunk>(
        "max_dead_bytes_per_chunk", "split a free chunk when at least this much is left over"),
    common::SizeRow<&ArenaConfig::initial_growth_chunk_size_bytes>(
        "initial_growth_chunk_size_bytes", "growth restarts here after a shrink (must be > 0)"),
    common::SizeRow<&ArenaConfig::max_power_of_two_extend_bytes>(
        "max_power_of_two_extend_bytes", "kNextPowerOfTwo stops doubling here (at least 256)"),
    common::BoolRow<&ArenaConfig::expandable_segments>(
        "expandable_segments", "1: one growing virtual range whose granules are "
        "committed and decommitted on demand (needs a VirtualMemorySource); beyond OrtArenaCfg"),
    common::SizeRow<&ArenaConfig::expandable_decommit_threshold>(
        "expandable_decommit_threshold",
        "expandable: held may exceed in use (the most in use over the last one or two epochs "
        "of 2048 frees) by this much before free granules are decommitted, down to half of it"),
};

}  // namespace

namespace arena {
std::span<const common::ConfigRow<ArenaConfig>> ArenaRows() { return kArenaRows; }
}  // namespace arena

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
  common::ThrowIfAny(common::ApplySettings(
      text, arena::ArenaRows(), "ArenaConfig", config));
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

std::string ArenaConfigHelp() {
  return fmt::format("ArenaConfig keys (OrtArenaCfg names), key:value,...:\n{}SIZE takes B, "
                     "K/KiB, M/MiB, G/GiB or T/TiB.",
                     common::ConfigHelpLines(arena::ArenaRows()));
}

std::string ArenaConfigDocTable() { return common::ConfigDocTable(arena::ArenaRows()); }

}  // namespace memarena
