// The drop-in's observability keys end to end: a program preloaded with
// MEMARENA_CONF=ceiling:64MiB,watermarks:75/88/95,heap_profile:...,prometheus_file:...
// prints one line per crossing in order and leaves a heap profile and a Prometheus file;
// every stack of a drop-in heap profile starts in the program, whichever function allocated;
// and forked workers that exit leave the parent's files alone and do not hang.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <sstream>
#include <utility>
#include <vector>

#include "support/read_file.h"
#include "tools/subprocess.h"

namespace {

using memarena::testing::ReadFile;

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

struct Mapping {
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
  std::string path;
};

// The MAPPED_LIBRARIES section of a heap profile (the process's /proc/self/maps).
std::vector<Mapping> MappingsOf(const std::string& profile) {
  std::vector<Mapping> mappings;
  std::istringstream lines(profile.substr(profile.find("MAPPED_LIBRARIES:")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    Mapping m;
    std::string range, perms, offset, device, inode;
    std::istringstream fields(line);
    fields >> range >> perms >> offset >> device >> inode >> m.path;
    const std::size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    m.start = std::stoull(range.substr(0, dash), nullptr, 16);
    m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    mappings.push_back(m);
  }
  return mappings;
}

std::string MappingAt(const std::vector<Mapping>& mappings, std::uintptr_t address) {
  for (const Mapping& m : mappings) {
    if (address >= m.start && address < m.end) return m.path.empty() ? "[anonymous]" : m.path;
  }
  return "[no mapping]";
}

// The drop-in's allocating functions and the heap's frames under them lie in the
// allocation-entry section, which the sampler drops, so a profile's top frame is the
// program's call (google-pprof also hides frames named malloc, calloc and the like; the
// growth monitor's top growing site does not).
TEST(DropinObservability, EveryProfiledStackStartsInTheProgram) {
  const std::string dir = ::testing::TempDir() + "memarena_stacks_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const memarena::testing::ProcessResult run = memarena::testing::RunProcess(
      {MEMARENA_ALLOCATE_EVERY_WAY},
      {"LD_PRELOAD=" MEMARENA_MALLOC_SO, "MEMARENA_CONF=heap_profile:" + dir + "/every.%p.heap"});
  ASSERT_EQ(run.status, 0) << run.err;
  std::string profile;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".heap") profile = ReadFile(entry.path());
  }
  ASSERT_NE(profile.find("MAPPED_LIBRARIES:"), std::string::npos) << profile.substr(0, 200);
  const std::vector<Mapping> mappings = MappingsOf(profile);
  const std::string program = std::filesystem::canonical(MEMARENA_ALLOCATE_EVERY_WAY);

  std::istringstream lines(profile.substr(0, profile.find("MAPPED_LIBRARIES:")));
  std::string line;
  std::getline(lines, line);  // the totals
  int stacks = 0;
  std::vector<std::pair<std::string, std::string>> elsewhere;  // first frame, its mapping
  while (std::getline(lines, line)) {
    const std::size_t at = line.find(" @ ");
    if (at == std::string::npos) continue;
    std::istringstream frames(line.substr(at + 3));
    std::string first;
    frames >> first;
    ++stacks;
    const std::string path = MappingAt(mappings, std::stoull(first, nullptr, 16));
    if (path != program) elsewhere.emplace_back(first, path);
  }
  // About 56 MiB at a mean of 512 KiB between samples: some 110 samples, one line per call
  // site (14) once merged.
  EXPECT_GE(stacks, 10) << profile.substr(0, 2000);
  for (const auto& [frame, path] : elsewhere) {
    ADD_FAILURE() << "a stack starts at " << frame << " in " << path << ", not in " << program;
  }
  std::filesystem::remove_all(dir);
}

// A prefork server's workers exit normally while the parent's monitor runs. Each worker's
// exit handlers used to write the heap profile and the Prometheus file over the parent's
// (and the stats file, without "%p"), and to wait forever on a lock the parent's monitor
// thread held at the fork.
TEST(DropinObservability, ForkedWorkersThatExitLeaveTheParentsFilesAndDoNotHang) {
  const std::string dir = ::testing::TempDir() + "memarena_fork_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const memarena::testing::ProcessResult run = memarena::testing::RunProcess(
      {MEMARENA_FORK_WORKERS, dir + "/workers.stats"},
      {"LD_PRELOAD=" MEMARENA_MALLOC_SO,
       "MEMARENA_CONF=monitor_interval:1ms,heap_profile:" + dir + "/workers.heap,prometheus_file:" +
           dir + "/workers.prom,stats_file:" + dir + "/workers.stats"});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  ASSERT_EQ(run.out.rfind("parent ", 0), 0u) << run.out;
  const std::string parent = run.out.substr(7, run.out.find(',') - 7);

  // The parent's figures: it holds 32 MiB at exit; a worker freed everything.
  EXPECT_NE(ReadFile(dir + "/workers.stats").find("pid " + parent + " "), std::string::npos)
      << ReadFile(dir + "/workers.stats");
  const std::string prom = ReadFile(dir + "/workers.prom");
  const std::string gauge = "memarena_bytes_in_use{allocator=\"host\"} ";
  const std::size_t at = prom.find(gauge);
  ASSERT_NE(at, std::string::npos) << prom;
  EXPECT_GE(std::stoull(prom.substr(at + gauge.size())), std::uint64_t{32} << 20) << prom;
  EXPECT_NE(ReadFile(dir + "/workers.heap").find("MAPPED_LIBRARIES:"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
