// ArenaConfig: OrtArenaCfg defaults, "key:value" parsing, and errors that name the key.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "arena/simulated_memory_source.h"
#include "memarena/arena.h"

namespace memarena {
namespace {

TEST(ArenaConfig, DefaultsAreOrtArenaCfgs) {
  const ArenaConfig c;
  EXPECT_EQ(c.max_mem, 0u);
  EXPECT_EQ(c.arena_extend_strategy, ArenaExtendStrategy::kNextPowerOfTwo);
  EXPECT_EQ(c.initial_chunk_size_bytes, 1u << 20);
  EXPECT_EQ(c.max_dead_bytes_per_chunk, 128u << 20);
  EXPECT_EQ(c.initial_growth_chunk_size_bytes, 2u << 20);
  EXPECT_EQ(c.max_power_of_two_extend_bytes, std::size_t{1} << 30);
  EXPECT_NO_THROW(c.Validate());
}

TEST(ArenaConfig, ParsesEveryKey) {
  const ArenaConfig c = ArenaConfig::Parse(
      "max_mem:8GiB, arena_extend_strategy:kSameAsRequested,initial_chunk_size_bytes:4MiB,"
      "max_dead_bytes_per_chunk:0,initial_growth_chunk_size_bytes=512KiB,"
      "max_power_of_two_extend_bytes:256M");
  EXPECT_EQ(c.max_mem, std::size_t{8} << 30);
  EXPECT_EQ(c.arena_extend_strategy, ArenaExtendStrategy::kSameAsRequested);
  EXPECT_EQ(c.initial_chunk_size_bytes, 4u << 20);
  EXPECT_EQ(c.max_dead_bytes_per_chunk, 0u);
  EXPECT_EQ(c.initial_growth_chunk_size_bytes, 512u << 10);
  EXPECT_EQ(c.max_power_of_two_extend_bytes, 256u << 20);
  EXPECT_EQ(ArenaConfig::Parse("arena_extend_strategy:0").arena_extend_strategy,
            ArenaExtendStrategy::kNextPowerOfTwo);
  EXPECT_EQ(ArenaConfig::Parse("arena_extend_strategy:1").arena_extend_strategy,
            ArenaExtendStrategy::kSameAsRequested);
  EXPECT_EQ(ArenaConfig::Parse("").max_mem, 0u);
}

std::string ErrorOf(const char* text) {
  try {
    ArenaConfig::Parse(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ArenaConfig, ErrorsNameTheKeyAndWhatIsAllowed) {
  struct Case {
    const char* text;
    const char* key;      // the key the message must name
    const char* allowed;  // and a word of what is allowed
  };
  for (const Case& c : {Case{"max_memory:1GiB", "max_memory", "max_power_of_two_extend_bytes"},
                        Case{"arena_extend_strategy:kDoubling", "arena_extend_strategy",
                             "kSameAsRequested"},
                        Case{"max_mem:lots", "max_mem", "GiB"},
                        Case{"initial_chunk_size_bytes:0", "initial_chunk_size_bytes", "positive"},
                        Case{"max_power_of_two_extend_bytes:100", "max_power_of_two_extend_bytes",
                             "at least 256"}}) {
    const std::string e = ErrorOf(c.text);
    EXPECT_NE(e.find(c.key), std::string::npos) << c.text << " -> " << e;
    EXPECT_NE(e.find(c.allowed), std::string::npos) << c.text << " -> " << e;
  }
}

TEST(ArenaConfig, TheArenaRejectsAnInvalidConfig) {
  ArenaConfig c;
  c.initial_growth_chunk_size_bytes = 0;
  EXPECT_THROW(BfcArena(std::make_shared<HostMemorySource>(), c), ConfigError);
  EXPECT_THROW(BfcArena(nullptr), std::invalid_argument);
}

// Issue 17: initial_chunk_size_bytes (or initial_growth_chunk_size_bytes) of 2^64 - 1
// wrapped to 0 when rounded, and the first allocation then doubled 0 forever holding the
// arena lock. Every size key now has a maximum, named in the message with the range.
TEST(ArenaConfig, EverySizeKeyHasAMaximumNamedInTheMessage) {
  for (const char* key : {"max_mem", "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
                          "initial_growth_chunk_size_bytes", "max_power_of_two_extend_bytes"}) {
    const std::string e = ErrorOf((std::string(key) + ":18446744073709551615").c_str());
    EXPECT_NE(e.find(key), std::string::npos) << e;
    EXPECT_NE(e.find("281474976710656"), std::string::npos) << "the largest value allowed: " << e;
    EXPECT_NO_THROW(ArenaConfig::Parse(std::string(key) + ":256TiB")) << key;
    EXPECT_NE(ErrorOf((std::string(key) + ":257TiB").c_str()), "") << key;
  }
  ArenaConfig c;
  c.initial_chunk_size_bytes = ~std::size_t{0};
  EXPECT_THROW(BfcArena(std::make_shared<HostMemorySource>(), c), ConfigError);
  c = ArenaConfig{};
  c.initial_growth_chunk_size_bytes = ~std::size_t{0};
  EXPECT_THROW(BfcArena(std::make_shared<HostMemorySource>(), c), ConfigError);
}

// The largest allowed sizes keep the growth arithmetic in range: a request after a shrink
// fails (the source cannot back 256 TiB) instead of spinning.
TEST(ArenaConfig, TheLargestAllowedSizesFailCleanlyInsteadOfSpinning) {
  ArenaConfig c;
  c.initial_chunk_size_bytes = std::size_t{1} << 48;
  c.initial_growth_chunk_size_bytes = std::size_t{1} << 48;
  c.max_power_of_two_extend_bytes = std::size_t{1} << 48;
  auto source = std::make_shared<arena::SimulatedMemorySource>(
      arena::SimulatedMemorySource::Options{.capacity = std::size_t{64} << 20});
  BfcArena arena(source, c);
  void* p = arena.TryAllocate(1 << 20);
  ASSERT_NE(p, nullptr) << "backoff reaches the request";
  arena.Deallocate(p);
  arena.ReleaseUnusedSpans();
  EXPECT_NE(arena.TryAllocate(32 << 20), nullptr);
  EXPECT_EQ(arena.TryAllocate(std::size_t{1} << 47), nullptr);
  EXPECT_GE(arena.GetStats().num_ooms, 1u);
}

TEST(ArenaConfig, FromEnvironmentNamesTheVariable) {
  ::setenv("MEMARENA_TEST_ARENA_CONF", "max_mem:64MiB", 1);
  EXPECT_EQ(ArenaConfig::FromEnvironment("MEMARENA_TEST_ARENA_CONF").max_mem, 64u << 20);
  ::setenv("MEMARENA_TEST_ARENA_CONF", "bogus:1", 1);
  try {
    ArenaConfig::FromEnvironment("MEMARENA_TEST_ARENA_CONF");
    FAIL() << "an unknown key was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("MEMARENA_TEST_ARENA_CONF"), std::string::npos) << e.what();
  }
  ::unsetenv("MEMARENA_TEST_ARENA_CONF");
  EXPECT_EQ(ArenaConfig::FromEnvironment("MEMARENA_TEST_ARENA_CONF").max_mem, 0u);
  EXPECT_FALSE(ArenaConfigHelp().empty());
}

}  // namespace
}  // namespace memarena
