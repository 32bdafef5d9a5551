// OrtArenaCfg <-> ArenaConfig and AllocatorStats -> ORT stats keys: the mappings that need no
// runtime, including the errors for bad OrtArenaCfg input.
#include <gtest/gtest.h>

#include <string>

#include "memarena/errors.h"
#include "memarena/ort.h"

namespace memarena::ort {
namespace {

TEST(OrtArenaCfgTest, EveryKeyCarriesOverWithOrtsMeaning) {
  const OrtArenaCfgEntry entries[] = {
      {"max_mem", 1 << 30},
      {"arena_extend_strategy", 1},
      {"initial_chunk_size_bytes", 4 << 20},
      {"max_dead_bytes_per_chunk", 1 << 20},
      {"initial_growth_chunk_size_bytes", 8 << 20},
      {"max_power_of_two_extend_bytes", 256 << 20},
  };
  const ArenaConfig config = ArenaConfigFromOrtArenaCfg(entries);
  EXPECT_EQ(config.max_mem, std::size_t{1} << 30);
  EXPECT_EQ(config.arena_extend_strategy, ArenaExtendStrategy::kSameAsRequested);
  EXPECT_EQ(config.initial_chunk_size_bytes, std::size_t{4} << 20);
  EXPECT_EQ(config.max_dead_bytes_per_chunk, std::size_t{1} << 20);
  EXPECT_EQ(config.initial_growth_chunk_size_bytes, std::size_t{8} << 20);
  EXPECT_EQ(config.max_power_of_two_extend_bytes, std::size_t{256} << 20);

  // And back: the six entries reproduce the same config.
  const auto back = OrtArenaCfgFromArenaConfig(config);
  ASSERT_EQ(back.size(), 6u);
  const ArenaConfig again = ArenaConfigFromOrtArenaCfg(back);
  EXPECT_EQ(again.max_mem, config.max_mem);
  EXPECT_EQ(again.arena_extend_strategy, config.arena_extend_strategy);
  EXPECT_EQ(again.initial_chunk_size_bytes, config.initial_chunk_size_bytes);
  EXPECT_EQ(again.max_dead_bytes_per_chunk, config.max_dead_bytes_per_chunk);
  EXPECT_EQ(again.initial_growth_chunk_size_bytes, config.initial_growth_chunk_size_bytes);
  EXPECT_EQ(again.max_power_of_two_extend_bytes, config.max_power_of_two_extend_bytes);
}

TEST(OrtArenaCfgTest, MinusOneKeepsOrtsDefault) {
  const OrtArenaCfgEntry entries[] = {
      {"max_mem", -1}, {"arena_extend_strategy", -1}, {"initial_chunk_size_bytes", -1}};
  const ArenaConfig config = ArenaConfigFromOrtArenaCfg(entries);
  const ArenaConfig defaults;
  EXPECT_EQ(config.max_mem, defaults.max_mem);
  EXPECT_EQ(config.arena_extend_strategy, ArenaExtendStrategy::kNextPowerOfTwo);
  EXPECT_EQ(config.initial_chunk_size_bytes, std::size_t{1} << 20);
}

std::string ErrorOf(std::initializer_list<OrtArenaCfgEntry> entries) {
  try {
    ArenaConfigFromOrtArenaCfg(std::vector<OrtArenaCfgEntry>(entries));
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(OrtArenaCfgTest, BadInputNamesTheKeyAndWhatIsAllowed) {
  const std::string unknown = ErrorOf({{"max_memory", 5}});
  EXPECT_NE(unknown.find("unknown key 'max_memory'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("max_power_of_two_extend_bytes"), std::string::npos) << unknown;

  const std::string negative = ErrorOf({{"max_mem", -7}});
  EXPECT_NE(negative.find("'max_mem'"), std::string::npos) << negative;
  EXPECT_NE(negative.find("-1 (default)"), std::string::npos) << negative;

  const std::string strategy = ErrorOf({{"arena_extend_strategy", 2}});
  EXPECT_NE(strategy.find("arena_extend_strategy"), std::string::npos) << strategy;
  EXPECT_NE(strategy.find("kSameAsRequested"), std::string::npos) << strategy;

  const std::string zero = ErrorOf({{"initial_chunk_size_bytes", 0}});
  EXPECT_NE(zero.find("initial_chunk_size_bytes"), std::string::npos) << zero;
}

TEST(OrtStatsTest, MemarenaStatsUnderOrtsKeyNames) {
  AllocatorStats stats;
  stats.limit_bytes = 4096;
  stats.bytes_in_use = 1;
  stats.bytes_held = 2;
  stats.peak_bytes_in_use = 3;
  stats.num_allocs = 4;
  stats.num_arena_extensions = 6;
  stats.num_arena_shrinkages = 7;
  stats.max_alloc_size = 8;
  stats.peak_bytes_held = 9;
  stats.bytes_requested = 10;
  stats.bytes_releasable = 11;
  stats.num_ooms = 12;
  const auto entries = OrtStatsEntries(stats, /*num_reserves=*/5);
  const std::vector<std::pair<std::string, std::string>> expected = {{"Limit", "4096"},
                                                                     {"InUse", "1"},
                                                                     {"TotalAllocated", "2"},
                                                                     {"MaxInUse", "3"},
                                                                     {"NumAllocs", "4"},
                                                                     {"NumReserves", "5"},
                                                                     {"NumArenaExtensions", "6"},
                                                                     {"NumArenaShrinkages", "7"},
                                                                     {"MaxAllocSize", "8"},
                                                                     {"memarena.PeakHeld", "9"},
                                                                     {"memarena.Requested", "10"},
                                                                     {"memarena.Releasable", "11"},
                                                                     {"memarena.NumOoms", "12"}};
  EXPECT_EQ(entries, expected);

  stats.limit_bytes = 0;  // memarena's "unlimited" is ORT's -1
  EXPECT_EQ(OrtStatsEntries(stats, 0).front(),
            (std::pair<std::string, std::string>{"Limit", "-1"}));
}

}  // namespace
}  // namespace memarena::ort
