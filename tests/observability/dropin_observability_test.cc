// The drop-in's observability keys end to end: a program preloaded with
// MEMARENA_CONF=ceiling:64MiB,watermarks:75/88/95,heap_profile:...,prometheus_file:...
// prints one line per crossing in order and leaves a heap profile and a Prometheus file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tools/subprocess.h"

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DropinObservability, WatermarkLinesHeapProfileAndPrometheusFile) {
  const std::string dir = ::testing::TempDir() + "memarena_obs_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const memarena::testing::ProcessResult run = memarena::testing::RunProcess(
      {MEMARENA_GROW_TO_CEILING},
      {"LD_PRELOAD=" MEMARENA_MALLOC_SO,
       "MEMARENA_CONF=ceiling:64MiB,watermarks:75/88/95,heap_profile:" + dir +
           "/grow.%p.heap,prometheus_file:" + dir + "/memarena.prom"});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::size_t first = run.err.find("watermark 75% crossed");
  const std::size_t second = run.err.find("watermark 88% crossed");
  const std::size_t third = run.err.find("watermark 95% crossed");
  ASSERT_NE(first, std::string::npos) << run.err;
  ASSERT_NE(second, std::string::npos) << run.err;
  ASSERT_NE(third, std::string::npos) << run.err;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_EQ(run.err.find("watermark 75% crossed", first + 1), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("of the 64.00 MiB ceiling"), std::string::npos) << run.err;

  std::string profile;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".heap") profile = ReadFile(entry.path());
  }
  EXPECT_EQ(profile.rfind("heap profile: ", 0), 0u) << profile.substr(0, 200);
  EXPECT_NE(profile.find("MAPPED_LIBRARIES:"), std::string::npos);

  const std::string prom = ReadFile(dir + "/memarena.prom");
  EXPECT_NE(prom.find("memarena_watermark_level{allocator=\"host\"} 0.95"), std::string::npos)
      << prom;
  EXPECT_NE(prom.find("memarena_growth_detected{allocator=\"host\"} 0"), std::string::npos);
  EXPECT_NE(prom.find("# TYPE memarena_bytes_in_use gauge"), std::string::npos) << prom;
  std::filesystem::remove_all(dir);
}

}  // namespace
