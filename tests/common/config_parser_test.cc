// The MEMARENA_CONF parser: good strings parse, and every kind of bad string names its key.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/config_parser.h"
#include "common/memarena_conf.h"
#include "memarena/memarena.h"

namespace memarena {
namespace {

std::string ErrorOf(std::string_view text) {
  try {
    HostConfig::Parse(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(HostConfigParse, DefaultsWhenEmpty) {
  const HostConfig c = HostConfig::Parse("");
  EXPECT_EQ(c.ceiling, 0u);
  EXPECT_DOUBLE_EQ(c.release_threshold_ratio, 0.8);
  std::vector<std::string> errors;
  EXPECT_FALSE(common::ParseMemarenaConf("", errors).dropin.stats_at_exit);
  EXPECT_TRUE(errors.empty());
}

TEST(HostConfigParse, SizesTakeEverySuffix) {
  EXPECT_EQ(HostConfig::Parse("ceiling:1048576").ceiling, 1048576u);
  EXPECT_EQ(HostConfig::Parse("ceiling:512KiB").ceiling, 512u << 10);
  EXPECT_EQ(HostConfig::Parse("ceiling:512K").ceiling, 512u << 10);
  EXPECT_EQ(HostConfig::Parse("ceiling:256MiB").ceiling, 256u << 20);
  EXPECT_EQ(HostConfig::Parse("ceiling:256m").ceiling, 256u << 20);
  EXPECT_EQ(HostConfig::Parse("ceiling:8GiB").ceiling, std::size_t{8} << 30);
  EXPECT_EQ(HostConfig::Parse("ceiling:2G").ceiling, std::size_t{2} << 30);
  EXPECT_EQ(HostConfig::Parse("ceiling:1TiB").ceiling, std::size_t{1} << 40);
  EXPECT_EQ(HostConfig::Parse("ceiling:64B").ceiling, 64u);
  // docs/dropin.md: KB/MB/GB are powers of 1024, and key=value works like key:value.
  EXPECT_EQ(HostConfig::Parse("ceiling:8GB").ceiling, std::size_t{8} << 30);
  EXPECT_EQ(HostConfig::Parse("ceiling=1GiB").ceiling, std::size_t{1} << 30);
  EXPECT_EQ(HostConfig::Parse("release_keep:64MiB").release_keep, std::size_t{64} << 20);
}

TEST(HostConfigParse, SeveralKeysWithSpacesAndEquals) {
  std::vector<std::string> errors;
  const common::MemarenaConf c = common::ParseMemarenaConf(
      " ceiling : 1GiB , release_threshold_ratio=0.5,stats_at_exit:1,trace_file:/tmp/t.csv,",
      errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(c.host.ceiling, std::size_t{1} << 30);
  EXPECT_DOUBLE_EQ(c.host.release_threshold_ratio, 0.5);
  EXPECT_TRUE(c.dropin.stats_at_exit);
  EXPECT_EQ(c.dropin.trace_file, "/tmp/t.csv");
  // HostConfig::Parse accepts the drop-in's keys too (they are MEMARENA_CONF's).
  EXPECT_EQ(HostConfig::Parse("stats_at_exit:1,ceiling:2GiB").ceiling, std::size_t{2} << 30);
}

// Issue 9: one bad key used to discard all of MEMARENA_CONF, a valid ceiling included.
TEST(MemarenaConf, ABadKeySkipsOnlyItselfAndTheValidKeysApply) {
  std::vector<std::string> errors;
  const common::MemarenaConf c = common::ParseMemarenaConf(
      "ceiling:64MiB,bogus_key:1,release_keep:lots,stats_at_exit:1,oom_message_interval", errors);
  EXPECT_EQ(c.host.ceiling, std::size_t{64} << 20);
  EXPECT_EQ(c.host.release_keep, 0u);  // the bad value left the default
  EXPECT_TRUE(c.dropin.stats_at_exit);
  EXPECT_EQ(c.dropin.oom_message_interval, 10u);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_NE(errors[0].find("unknown key 'bogus_key'; allowed keys: ceiling"), std::string::npos)
      << errors[0];
  EXPECT_NE(errors[0].find("stats_detail"), std::string::npos) << "lists drop-in keys too";
  EXPECT_NE(errors[1].find("bad value 'lots' for key 'release_keep'"), std::string::npos)
      << errors[1];
  EXPECT_NE(errors[2].find("key 'oom_message_interval' has no value"), std::string::npos)
      << errors[2];
  for (const std::string& e : errors) {
    EXPECT_EQ(e.rfind("MEMARENA_CONF: ", 0), 0u) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << "one line each: " << e;
  }
}

// Only a MEMARENA_CONF with something in it is parsed at start-up; unset or empty, every key
// keeps its default and the parsing stays off the start-up path (docs/dropin.md).
TEST(MemarenaConf, OnlyANonEmptyVariableCountsAsSet) {
  const char* saved = std::getenv("MEMARENA_CONF");
  const std::string restore = saved != nullptr ? saved : "";
  ::unsetenv("MEMARENA_CONF");
  EXPECT_FALSE(common::MemarenaConfIsSet());
  ::setenv("MEMARENA_CONF", "", 1);
  EXPECT_FALSE(common::MemarenaConfIsSet());
  ::setenv("MEMARENA_CONF", "ceiling=1G", 1);
  EXPECT_TRUE(common::MemarenaConfIsSet());
  if (saved != nullptr) {
    ::setenv("MEMARENA_CONF", restore.c_str(), 1);
  } else {
    ::unsetenv("MEMARENA_CONF");
  }
}

TEST(HostConfigParse, ThrowsOneLinePerBadKey) {
  const std::string e = ErrorOf("celing:1GiB,ceiling:1GiB,thread_cache_bytes:big");
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 1) << e;
  EXPECT_NE(e.find("unknown key 'celing'"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'thread_cache_bytes'"), std::string::npos) << e;
}

TEST(HostConfigHelp, HasOneLinePerRowWithItsDefault) {
  const std::string help = HostConfigHelp();
  for (const auto& row : common::HostRows()) {
    EXPECT_NE(help.find(fmt::format("  {}:{}", row.key, row.form)), std::string::npos) << row.key;
  }
  for (const auto& row : common::DropinRows()) {
    EXPECT_NE(help.find(fmt::format("  {}:{}", row.key, row.form)), std::string::npos) << row.key;
  }
  // Defaults come from the structs' initializers through the rows' printers.
  EXPECT_NE(help.find("(default 32MiB)"), std::string::npos) << help;
  EXPECT_NE(help.find("(default 0.8)"), std::string::npos) << help;
  EXPECT_NE(help.find("(default abort)"), std::string::npos) << help;
}

TEST(HostConfigParse, UnknownKeyListsTheAllowedOnes) {
  const std::string e = ErrorOf("celing:1GiB");
  EXPECT_NE(e.find("unknown key 'celing'"), std::string::npos) << e;
  EXPECT_NE(e.find("ceiling"), std::string::npos) << e;
  EXPECT_NE(e.find("release_threshold_ratio"), std::string::npos) << e;
  EXPECT_NE(e.find("MEMARENA_CONF"), std::string::npos) << e;
}

TEST(HostConfigParse, MissingValueNamesTheKey) {
  EXPECT_NE(ErrorOf("ceiling").find("key 'ceiling' has no value"), std::string::npos);
  EXPECT_NE(ErrorOf("ceiling:").find("key 'ceiling' has no value"), std::string::npos);
}

TEST(HostConfigParse, BadSizesSayWhatIsAllowed) {
  for (const char* bad : {"ceiling:lots", "ceiling:-5", "ceiling:12XB", "ceiling:1.5GiB"}) {
    const std::string e = ErrorOf(bad);
    EXPECT_NE(e.find("for key 'ceiling'"), std::string::npos) << bad << " -> " << e;
    EXPECT_NE(e.find("KiB"), std::string::npos) << bad << " -> " << e;
  }
  EXPECT_NE(ErrorOf("ceiling:99999999999999TiB").find("overflows"), std::string::npos);
}

TEST(HostConfigParse, BadRatiosSayTheRange) {
  for (const char* bad : {"release_threshold_ratio:0", "release_threshold_ratio:1.5",
                          "release_threshold_ratio:abc", "release_threshold_ratio:0.5x",
                          "release_threshold_ratio:nan"}) {
    const std::string e = ErrorOf(bad);
    EXPECT_NE(e.find("key 'release_threshold_ratio'"), std::string::npos) << bad << " -> " << e;
    EXPECT_NE(e.find("(0, 1]"), std::string::npos) << bad << " -> " << e;
  }
}

TEST(HostConfigParse, BadBoolsSayZeroOrOne) {
  const std::string e = ErrorOf("stats_at_exit:maybe");
  EXPECT_NE(e.find("key 'stats_at_exit'"), std::string::npos) << e;
  EXPECT_NE(e.find("0 or 1"), std::string::npos) << e;
}

TEST(ConfigParser, IntegersCheckTheirRange) {
  EXPECT_EQ(common::ParseInteger("n", "42", 0, 100), 42);
  EXPECT_THROW(common::ParseInteger("n", "101", 0, 100), ConfigError);
  EXPECT_THROW(common::ParseInteger("n", "4x", 0, 100), ConfigError);
}

TEST(FormatBytes, PicksAReadableUnit) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(std::size_t{3} << 30), "3.00 GiB");
  EXPECT_EQ(FormatBytes(std::size_t{1} << 50), "1.00 PiB");
  EXPECT_EQ(FormatBytes(std::size_t{1} << 60), "1.00 EiB") << "not 1048576.00 TiB";
  EXPECT_EQ(FormatBytes(SIZE_MAX), "16.00 EiB");
}

// Issue 17: every size key of MEMARENA_CONF has a maximum that keeps the heap's arithmetic
// in range, and the message gives the allowed range.
TEST(HostConfig, SizeKeysRejectValuesAboveTheirMaximumWithTheRange) {
  for (const char* key : {"ceiling", "thread_cache_bytes"}) {
    EXPECT_NO_THROW(HostConfig::Parse(std::string(key) + ":256TiB")) << key;
    try {
      HostConfig::Parse(std::string(key) + ":18446744073709551615");
      ADD_FAILURE() << key << ": 2^64 - 1 accepted";
    } catch (const ConfigError& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find(key), std::string::npos) << text;
      EXPECT_NE(text.find("at most 256TiB (281474976710656 bytes"), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace memarena
