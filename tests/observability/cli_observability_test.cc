// The CLI side of issue 13: `memarena run --watermarks` shows the crossings of a program,
// and `memarena profile-diff A B` names the stack that grew between two heap profiles.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tools/subprocess.h"

namespace {

using memarena::testing::RunProcess;

TEST(CliObservability, RunWatermarksShowsEachCrossingOnce) {
  const auto run = RunProcess({MEMARENA_CLI, "run", "--preload", MEMARENA_MALLOC_SO, "--ceiling",
                               "64MiB", "--watermarks", "75/88/95", "--", MEMARENA_GROW_TO_CEILING});
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* level : {"75%", "88%", "95%"}) {
    const std::string line = std::string("watermark ") + level + " crossed";
    const std::size_t at = run.err.find(line);
    EXPECT_NE(at, std::string::npos) << run.err;
    EXPECT_EQ(run.err.find(line, at + 1), std::string::npos) << run.err;
  }
}

TEST(CliObservability, RunWatermarksRejectsBadLevelsAsAUsageError) {
  const auto bad = RunProcess({MEMARENA_CLI, "run", "--ceiling", "64MiB", "--watermarks", "90/80",
                               "--", "true"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--watermarks"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("75/88/95"), std::string::npos) << bad.err;
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(CliObservability, ProfileDiffNamesTheStackThatGrew) {
  const std::string dir = ::testing::TempDir();
  const std::string maps = "\nMAPPED_LIBRARIES:\n555500000000-555500100000 r-xp 00001000 08:01 1 /opt/app\n";
  WriteFile(dir + "a.heap",
            "heap profile:      3:  3145728 [     3:  3145728] @ heapprofile\n"
            "     2:  2097152 [     2:  2097152] @ 0x555500000100 0x555500000200\n"
            "     1:  1048576 [     1:  1048576] @ 0x555500000300\n" + maps);
  WriteFile(dir + "b.heap",
            "heap profile:     11: 11534336 [    11: 11534336] @ heapprofile\n"
            "    10: 10485760 [    10: 10485760] @ 0x555500000100 0x555500000200\n"
            "     1:  1048576 [     1:  1048576] @ 0x555500000300\n" + maps);
  const auto diff = RunProcess({MEMARENA_CLI, "profile-diff", dir + "a.heap", dir + "b.heap"});
  ASSERT_EQ(diff.status, 0) << diff.err;
  EXPECT_NE(diff.out.find("3.00 MiB -> 11.00 MiB (+8.00 MiB); 1 of 2 stacks changed"),
            std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("+8.00 MiB  2.00 MiB -> 10.00 MiB  @ /opt/app+0x1100 /opt/app+0x1200"),
            std::string::npos) << diff.out;

  WriteFile(dir + "not.heap", "hello\n");
  const auto bad = RunProcess({MEMARENA_CLI, "profile-diff", dir + "not.heap", dir + "b.heap"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("not a heap profile"), std::string::npos) << bad.err;
  const auto usage = RunProcess({MEMARENA_CLI, "profile-diff", dir + "a.heap"});
  EXPECT_EQ(usage.status, 2) << usage.err;
}

// A function of this program for a profile frame to land in.
[[gnu::noinline]] void* GrowingAllocationSite() {
  static char block[16];
  return block;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(CliObservability, ProfileDiffNamesTheFunctionThatGrew) {
  const std::string dir = ::testing::TempDir();
  // A profile of this very process: its maps relocate the frame into this executable.
  const std::string maps = "\nMAPPED_LIBRARIES:\n" + ReadAll("/proc/self/maps");
  const auto site = reinterpret_cast<std::uintptr_t>(&GrowingAllocationSite) + 1;
  WriteFile(dir + "before.heap",
            "heap profile:      1:  1048576 [     1:  1048576] @ heapprofile\n"
            "     1:  1048576 [     1:  1048576] @ 0x10\n" + maps);
  WriteFile(dir + "after.heap",
            std::string("heap profile:      9:  9437184 [     9:  9437184] @ heapprofile\n"
            "     1:  1048576 [     1:  1048576] @ 0x10\n") +
            "     8:  8388608 [     8:  8388608] @ " + fmt::format("{:#x}", site) + "\n" + maps);
  const auto diff =
      RunProcess({MEMARENA_CLI, "profile-diff", dir + "before.heap", dir + "after.heap"});
  ASSERT_EQ(diff.status, 0) << diff.err;
  EXPECT_NE(diff.out.find("+8.00 MiB  0 B -> 8.00 MiB  @ (anonymous namespace)::GrowingAllocationSite()"),
            std::string::npos) << diff.out;
}

TEST(CliObservability, ReplayReportDrawsTheWatermarkLinesAndCrossings) {
  const std::string dir = ::testing::TempDir();
  std::string trace = "Thread,Time,Action,Pointer,Size,Stream\n";
  for (int i = 0; i < 56; ++i) {
    trace += fmt::format("1,00:00:00.{:06d},allocate,{:#x},1048576,0x0\n", i, 0x10000000 + i * 0x100000);
  }
  for (int i = 0; i < 56; ++i) {
    trace += fmt::format("1,00:00:01.{:06d},free,{:#x},1048576,0x0\n", i, 0x10000000 + i * 0x100000);
  }
  WriteFile(dir + "grow.csv", trace);
  const std::string report = dir + "grow.html";
  const auto run = RunProcess({MEMARENA_CLI, "replay", dir + "grow.csv", "--allocator", "bfc", "--config",
                               "max_mem:64MiB", "--report", report, "--watermarks", "50/90"});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string html = ReadAll(report);
  for (const char* level : {"50%", "90%"}) {
    EXPECT_NE(html.find(std::string("watermark ") + level + "</text>"), std::string::npos)
        << "no legend entry for the " << level << " line";
    EXPECT_NE(html.find(std::string("watermark ") + level + " crossed by event"), std::string::npos)
        << "no crossing mark for " << level;
  }
  EXPECT_NE(html.find("stroke-dasharray=\"2,3\""), std::string::npos) << "no dashed level line";

  const auto no_limit = RunProcess({MEMARENA_CLI, "replay", dir + "grow.csv", "--allocator", "bfc",
                                    "--report", report, "--watermarks", "50/90"});
  EXPECT_EQ(no_limit.status, 2);
  EXPECT_NE(no_limit.err.find("max_mem:SIZE"), std::string::npos) << no_limit.err;
}

}  // namespace
