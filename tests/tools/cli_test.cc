// The memarena CLI end to end: every subcommand runs on the shipped sample traces, its
// numbers agree with a direct replay in this process, and bad input gives its message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "memarena/planner.h"
#include "memarena/tracing.h"
#include "replay.h"
#include "replay_target.h"
#include "scenarios.h"
#include "subprocess.h"

namespace memarena::testing {
namespace {

const std::string kData = MEMARENA_DATA_DIR;

ProcessResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), MEMARENA_CLI);
  return RunProcess(args, {"MEMARENA_CONF="});
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The number after "key": at or after `from` in a JSON text (the CLI's JSON is flat enough
// for this, and the report test parses it fully with Python).
double JsonNumber(const std::string& json, const std::string& key, std::size_t from = 0) {
  const std::string needle = "\"" + key + "\":";
  const std::size_t at = json.find(needle, from);
  if (at == std::string::npos) {
    ADD_FAILURE() << key << " missing in " << json;
    return -1;
  }
  return std::stod(json.substr(at + needle.size()));
}

std::string TempDirPath() {
  return ::testing::TempDir() + "memarena_cli_test." + std::to_string(getpid());
}

std::string TempDir() {
  const std::string dir = TempDirPath();
  std::filesystem::create_directories(dir);
  return dir;
}

// The tests share one directory per process; it goes once they have all run (each ctest
// run used to leave its traces and pages in /tmp).
class RemoveTempDir : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(TempDirPath(), ignored);
  }
};
::testing::Environment* const kRemoveTempDir =
    ::testing::AddGlobalTestEnvironment(new RemoveTempDir);

TEST(Cli, EverySubcommandHasHelp) {
  for (const char* command : {"replay", "compare", "plan", "run", "demo"}) {
    const auto r = Cli({command, "--help"});
    EXPECT_EQ(r.status, 0) << command << r.err;
    EXPECT_TRUE(Contains(r.out, std::string("usage: memarena ") + command)) << r.out;
  }
  const auto top = Cli({"--help"});
  EXPECT_EQ(top.status, 0);
  EXPECT_TRUE(Contains(top.out, "2 usage error")) << top.out;
  for (const char* command : {"replay", "compare", "plan", "run", "demo"}) {
    EXPECT_TRUE(Contains(top.out, command)) << top.out;
  }
}

TEST(Cli, HelpTextsSayWhatTheyDo) {
  const auto version = Cli({"--version"});
  EXPECT_EQ(version.status, 0) << version.err;
  EXPECT_TRUE(Contains(version.out, "memarena 0.")) << version.out;
  const auto run = Cli({"run", "--help"});
  EXPECT_TRUE(Contains(run.out, "Exit status: the command's own")) << run.out;
  const auto replay = Cli({"replay", "--help"});
  const auto first = replay.out.find("ArenaConfig keys");
  ASSERT_NE(first, std::string::npos) << replay.out;
  EXPECT_EQ(replay.out.find("ArenaConfig keys", first + 1), std::string::npos) << replay.out;
  const auto plan = Cli({"plan", "--help"});
  EXPECT_TRUE(Contains(plan.out, "--capacity BYTES")) << plan.out;
}

TEST(Cli, PlanCapacitySaysWhetherThePlanFits) {
  const std::string file = kData + "/lifetimes_small.csv";
  const auto fits = Cli({"plan", file, "--capacity", "1GiB", "--json"});
  EXPECT_EQ(fits.status, 0) << fits.err;
  EXPECT_TRUE(Contains(fits.out, "\"capacity_bytes\":1073741824,\"fits\":true")) << fits.out;
  const auto too_small = Cli({"plan", file, "--capacity", "1"});
  EXPECT_EQ(too_small.status, 1) << too_small.err;
  EXPECT_TRUE(Contains(too_small.out, "does NOT fit")) << too_small.out;
}

TEST(Cli, BadArgumentsGiveAClearMessageAndNonZeroExit) {
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{}, 2, ""},
      {{"frobnicate"}, 2, "unknown command 'frobnicate'"},
      {{"replay"}, 2, "memarena replay: missing argument"},
      {{"replay", "a.csv", "b.csv"}, 2, "unexpected argument 'b.csv'"},
      {{"replay", "a.csv", "--bogus"}, 2, "unknown option '--bogus'"},
      {{"replay", "a.csv", "--report"}, 2, "option '--report' needs a value"},
      {{"replay", "/nonexistent.csv"}, 1,
       "memarena replay: /nonexistent.csv: No such file or directory"},
      {{"replay", kData}, 1, "memarena replay: " + kData + ": is a directory"},
      {{"compare", kData}, 1, "memarena compare: " + kData + ": is a directory"},
      {{"plan", kData}, 1, "memarena plan: " + kData + ": is a directory"},
      {{"plan", "nosuch.csv"}, 1, "memarena plan: nosuch.csv: No such file or directory"},
      {{"replay", kData + "/rmm_handwritten.csv", "--allocator", "jemalloc"}, 2,
       "unknown allocator 'jemalloc'; allowed: host, bfc, planned, system"},
      {{"replay", kData + "/rmm_handwritten.csv", "--allocator", "bfc", "--config", "max_meme:1G"},
       2, "--config for bfc: ArenaConfig: unknown key 'max_meme'"},
      {{"replay", kData + "/rmm_handwritten.csv", "--config", "thread_cache_bytes:1MiB"}, 2,
       "--config for host: 'thread_cache_bytes:1MiB' is not accepted; host takes only ceiling:SIZE"},
      {{"replay", kData + "/rmm_handwritten.csv", "--allocator", "system", "--config",
        "max_mem:1GiB"},
       2, "--config for system: 'max_mem:1GiB' is not accepted; system takes only ceiling:SIZE"},
      {{"replay", kData + "/rmm_handwritten.csv", "--config", "ceiling:lots"}, 2,
       "bad value 'lots' for --config for host: ceiling"},
      {{"plan", kData + "/lifetimes_small.csv", "--capacity", "0"}, 2, "bad value '0' for --capacity"},
      {{"replay", kData + "/lifetimes_small.csv"}, 1, "the header has no Thread column"},
      {{"compare", kData + "/rmm_handwritten.csv", "--ceiling", "lots"}, 2,
       "bad value 'lots' for --ceiling"},
      {{"plan", kData + "/rmm_handwritten.csv"}, 1, ""},
      {{"plan", kData + "/lifetimes_small.csv", "--budget-ms", "0"}, 2, "expected a whole number >= 1"},
      {{"replay", "a.csv", "--json", "--prometheus"}, 2, "choose one"},
      {{"run"}, 2, "no command to run"},
      {{"run", "--preload", "/nonexistent.so", "--", "true"}, 1, "/nonexistent.so: no such file"},
      {{"demo", "--cases", "x"}, 2, "bad value 'x' for --cases"},
  };
  for (const Case& c : cases) {
    const auto r = Cli(c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_EQ(r.status, c.status) << joined << "\n" << r.err;
    EXPECT_TRUE(Contains(r.err, c.message)) << joined << "\nstderr: " << r.err;
    EXPECT_FALSE(r.err.empty()) << joined;
  }
}

tools::ReplayResult DirectReplay(const std::string& trace, const std::string& allocator,
                          const std::string& config) {
  const auto records = ReadTrace(trace);
  auto target = tools::MakeTarget(allocator, config);
  return tools::Replay(records, *target);
}

// `exact`: the allocator is deterministic across processes (BFC, planned). The host
// allocator is one per process and folds its peak counters lazily, and glibc's usable sizes
// depend on its dynamic mmap threshold, so for those the peaks agree within 1%.
// How closely a CLI replay must agree with the same replay in this process. kExact: every
// figure. kHeldVaries: counts and in-use figures exactly, held only bounded below by in use,
// because the planner's improving search runs against a clock, so two runs on a busy
// machine may settle on different plans. kNear: within 1% (a heap shared with the process).
enum class Agreement { kExact, kHeldVaries, kNear };

void ExpectAgrees(const std::string& json, std::size_t from, const tools::ReplayResult& direct,
                  Agreement agreement) {
  EXPECT_EQ(JsonNumber(json, "allocations", from), static_cast<double>(direct.allocations));
  EXPECT_EQ(JsonNumber(json, "frees", from), static_cast<double>(direct.frees));
  EXPECT_EQ(JsonNumber(json, "ooms", from), static_cast<double>(direct.ooms));
  const double in_use = static_cast<double>(direct.peak_in_use);
  const double requested = static_cast<double>(direct.peak_requested);
  if (agreement == Agreement::kNear) {
    EXPECT_NEAR(JsonNumber(json, "peak_in_use", from), in_use, in_use * 0.01);
    EXPECT_NEAR(JsonNumber(json, "peak_requested", from), requested, requested * 0.01);
    return;
  }
  EXPECT_EQ(JsonNumber(json, "peak_in_use", from), in_use);
  EXPECT_EQ(JsonNumber(json, "peak_requested", from), requested);
  if (agreement == Agreement::kExact) {
    EXPECT_EQ(JsonNumber(json, "peak_held", from), static_cast<double>(direct.peak_held));
  } else {
    EXPECT_GE(JsonNumber(json, "peak_held", from), in_use);
  }
}

TEST(Cli, ReplayJsonAgreesWithADirectReplay) {
  const std::string trace = kData + "/dynamic_shapes.csv";
  struct Run {
    std::string allocator, config;
    Agreement agreement;
  };
  for (const Run& run : std::vector<Run>{
           {"bfc", "", Agreement::kExact},
           {"bfc", "arena_extend_strategy:kSameAsRequested", Agreement::kExact},
           {"bfc", "max_mem:16MiB", Agreement::kExact},
           {"bfc", "expandable_segments:1", Agreement::kExact},
           {"bfc", "expandable_segments:1,max_mem:16MiB", Agreement::kExact},
           {"planned", "", Agreement::kHeldVaries},
           {"host", "", Agreement::kNear},
           {"system", "ceiling:8MiB", Agreement::kNear}}) {
    SCOPED_TRACE(run.allocator + " " + run.config);
    std::vector<std::string> args = {"replay", trace, "--json", "--allocator", run.allocator};
    if (!run.config.empty()) {
      args.push_back("--config");
      args.push_back(run.config);
    }
    const auto r = Cli(args);
    ASSERT_EQ(r.status, 0) << r.err;
    const tools::ReplayResult direct = DirectReplay(trace, run.allocator, run.config);
    EXPECT_EQ(JsonNumber(r.out, "events"), 992);
    ExpectAgrees(r.out, r.out.find("\"results\""), direct, run.agreement);
  }
}

TEST(Cli, ReplayTextShowsTheNumbers) {
  const std::string trace = kData + "/dynamic_shapes.csv";
  const auto r = Cli({"replay", trace, "--allocator", "bfc", "--config", "max_mem:16MiB"});
  ASSERT_EQ(r.status, 0) << r.err;
  const tools::ReplayResult direct = DirectReplay(trace, "bfc", "max_mem:16MiB");
  ASSERT_GT(direct.ooms, 0u);  // 16 MiB is below the trace's peak: OOMs are reported
  for (const char* column : {"peak in use", "peak held", "frag. at peak", "OOMs", "ops/s"}) {
    EXPECT_TRUE(Contains(r.out, column)) << r.out;
  }
  EXPECT_TRUE(Contains(r.out, FormatBytes(direct.peak_in_use))) << r.out;
  EXPECT_TRUE(Contains(r.out, FormatBytes(direct.peak_held))) << r.out;
  EXPECT_TRUE(Contains(r.out, "  " + std::to_string(direct.ooms) + "  ")) << r.out;
}

TEST(Cli, ReplayExportsPrometheusMetrics) {
  const std::string trace = kData + "/dynamic_shapes.csv";
  const auto r = Cli({"replay", trace, "--allocator", "bfc", "--prometheus"});
  ASSERT_EQ(r.status, 0) << r.err;
  const tools::ReplayResult direct = DirectReplay(trace, "bfc", "");
  EXPECT_TRUE(Contains(r.out, "# TYPE memarena_peak_bytes_in_use gauge\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "memarena_peak_bytes_in_use{allocator=\"bfc (kNextPowerOfTwo)\"} " +
                                  std::to_string(direct.peak_in_use) + "\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "memarena_allocs_total{allocator=\"bfc (kNextPowerOfTwo)\"} " +
                                  std::to_string(direct.allocations) + "\n"))
      << r.out;
}

// Written by hand in RMM's format: wall-clock times, hex pointers, a stream pointer, an
// address reused after its free, a failed allocation and a free of an unknown pointer.
TEST(Cli, HandWrittenRmmLogReplaysCorrectly) {
  const auto r = Cli({"replay", kData + "/rmm_handwritten.csv", "--allocator", "bfc", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(JsonNumber(r.out, "events"), 10);
  EXPECT_EQ(JsonNumber(r.out, "trace_peak_requested"), 1048576 + 2097152 + 4096);
  EXPECT_EQ(JsonNumber(r.out, "allocations"), 4);
  EXPECT_EQ(JsonNumber(r.out, "frees"), 4);
  EXPECT_EQ(JsonNumber(r.out, "unknown_frees"), 1);
  EXPECT_EQ(JsonNumber(r.out, "trace_failures"), 1);
  EXPECT_EQ(JsonNumber(r.out, "ooms"), 0);
  // BFC rounds to 256 B and these sizes are multiples: exactly the live requested bytes.
  EXPECT_EQ(JsonNumber(r.out, "peak_requested"), 1048576 + 2097152 + 4096);
  EXPECT_EQ(JsonNumber(r.out, "peak_in_use"), 1048576 + 2097152 + 4096);
  const auto text = Cli({"replay", kData + "/rmm_handwritten.csv", "--allocator", "system"});
  EXPECT_TRUE(Contains(text.out, "1 frees of unknown pointers skipped")) << text.out;
  EXPECT_TRUE(Contains(text.out, "1 allocations that failed when recorded")) << text.out;
}

TEST(Cli, ReplayShowsProgressOnRequest) {
  const std::string trace = kData + "/test_suite.csv";
  const auto r = Cli({"replay", trace, "--allocator", "system", "--progress"});
  ASSERT_EQ(r.status, 0) << r.err;
  // The parse phase counts bytes of the file and ends at all of them.
  const std::string size = FormatBytes(std::filesystem::file_size(trace));
  EXPECT_TRUE(Contains(r.err, "replay: parsing " + trace + " 100% (" + size + "/" + size + ")"))
      << r.err;
  // Forced progress shows at once, so a line before the end with its ETA comes first.
  const std::string line = "replay: parsing " + trace + " ";
  const std::size_t first = r.err.find(line);
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_NE(r.err.substr(first + line.size(), 4), "100%") << r.err;
  EXPECT_NE(r.err.find("ETA ", first), std::string::npos) << r.err;
  EXPECT_TRUE(Contains(r.err, "replay system: replaying 100% (")) << r.err;
  EXPECT_TRUE(Contains(r.err, "ETA ")) << r.err;
  const auto quiet = Cli({"replay", kData + "/test_suite.csv", "--allocator", "system", "--no-progress"});
  EXPECT_EQ(quiet.err, "");
}

// The report's segment map: the arena replayed to the trace's peak (row 3: 512 KiB, 1 MiB and
// 256 KiB live), each region with its used and free parts. kNextPowerOfTwo makes a 1 MiB region
// (512 KiB + 256 KiB used, 256 KiB free) and a 2 MiB one (1 MiB used, 1 MiB free); the
// expandable arena holds one 2 MiB range with 256 KiB free at its end.
TEST(Cli, ReplayReportMapsEachArenaSegmentAtThePeak) {
  const std::string dir = TempDir();
  const std::string trace = dir + "/tiny.csv";
  std::ofstream(trace) << "Thread,Time,Action,Pointer,Size,Stream\n"
                          "1,00:00:00.000001,allocate,0x1000,524288,0\n"
                          "1,00:00:00.000002,allocate,0x2000,1048576,0\n"
                          "1,00:00:00.000003,allocate,0x3000,262144,0\n"
                          "1,00:00:00.000004,free,0x1000,524288,0\n"
                          "1,00:00:00.000005,free,0x2000,1048576,0\n"
                          "1,00:00:00.000006,free,0x3000,262144,0\n";
  const auto Report = [&](const std::string& config) {
    const std::string html = dir + "/map.html";
    const auto r = Cli({"replay", trace, "--allocator", "bfc", "--config", config, "--report", html});
    EXPECT_EQ(r.status, 0) << r.err;
    std::stringstream text;
    text << std::ifstream(html).rdbuf();
    return text.str();
  };
  const auto Row = [](std::vector<std::string> cells) {
    std::string row = "<tr>";
    for (const auto& c : cells) row += "<td>" + c + "</td>";
    return row + "</tr>";
  };
  const std::string plain = Report("arena_extend_strategy:kNextPowerOfTwo");
  EXPECT_TRUE(Contains(plain, "segments at the peak, bfc (kNextPowerOfTwo)")) << plain;
  EXPECT_TRUE(Contains(plain, "replayed to row 3, where the trace&#39;s live requested bytes "
                              "peak at 1.75 MiB"));
  EXPECT_TRUE(Contains(plain, Row({"1", "2.00 MiB", "1.00 MiB", "1.00 MiB", "0 B", "1", "1.00 MiB"})))
      << plain;
  EXPECT_TRUE(Contains(plain, Row({"2", "1.00 MiB", "768.00 KiB", "256.00 KiB", "0 B", "2",
                                   "256.00 KiB"})))
      << plain;
  EXPECT_TRUE(Contains(plain, Row({"all 2", "3.00 MiB", "1.75 MiB", "1.25 MiB", "0 B", "3",
                                   "1.00 MiB"})))
      << plain;
  // One bar part per chunk: three in use, two free.
  EXPECT_TRUE(Contains(plain, "<title>in use: 256.00 KiB (asked 256.00 KiB) at offset 524288</title>"));
  EXPECT_TRUE(Contains(plain, "<title>free: 1.00 MiB at offset 1048576, 0 B of it decommitted</title>"));

  const std::string expandable = Report("expandable_segments:1");
  EXPECT_TRUE(Contains(expandable, Row({"all 1", "2.00 MiB", "1.75 MiB", "256.00 KiB", "0 B", "3",
                                        "256.00 KiB"})))
      << expandable;
  EXPECT_TRUE(Contains(expandable, "<title>free: 256.00 KiB at offset 1835008, 0 B of it decommitted</title>"));
  std::filesystem::remove(trace);
  std::filesystem::remove(dir + "/map.html");
}

// The planned row records a pass and plans before its measured one: the line says so.
TEST(Cli, ComparesPlannedRowNamesItsPhases) {
  const auto r = Cli({"compare", kData + "/test_suite.csv", "--progress"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, ": recording and planning ")) << r.err;
  EXPECT_TRUE(Contains(r.err, ": replaying ")) << r.err;
}

TEST(Cli, CompareShowsEveryAllocatorAndStrategyAgreeingWithDirectReplays) {
  const std::string trace = kData + "/recorded_python.csv";
  const auto r = Cli({"compare", trace, "--json", "--no-progress"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::pair<std::string, std::string>> lineup = {
      {"bfc", "arena_extend_strategy:kNextPowerOfTwo"},
      {"bfc", "arena_extend_strategy:kSameAsRequested"},
      {"bfc", "expandable_segments:1"},
      {"planned", ""},
      {"system", ""}};
  const std::vector<Agreement> agreement = {Agreement::kExact, Agreement::kExact,
                                           Agreement::kExact, Agreement::kHeldVaries,
                                           Agreement::kNear};
  const std::vector<std::string> labels = {"\"bfc (kNextPowerOfTwo)\"", "\"bfc (kSameAsRequested)\"",
                                           "\"bfc (expandable)\"", "\"planned\"", "\"system\""};
  EXPECT_TRUE(Contains(r.out, "{\"allocator\":\"host\"")) << r.out;
  for (std::size_t i = 0; i < lineup.size(); ++i) {
    SCOPED_TRACE(labels[i]);
    const std::size_t at = r.out.find("{\"allocator\":" + labels[i]);
    ASSERT_NE(at, std::string::npos) << r.out;
    ExpectAgrees(r.out, at, DirectReplay(trace, lineup[i].first, lineup[i].second),
                 agreement[i]);
  }
  const auto text = Cli({"compare", trace, "--ceiling", "1MiB"});
  ASSERT_EQ(text.status, 0) << text.err;
  for (const char* label : {"host (ceiling 1.00 MiB)", "bfc (kNextPowerOfTwo, max_mem 1.00 MiB)",
                            "bfc (kSameAsRequested, max_mem 1.00 MiB)",
                            "bfc (expandable, max_mem 1.00 MiB)", "planned (ceiling 1.00 MiB)",
                            "system (ceiling 1.00 MiB)"}) {
    EXPECT_TRUE(Contains(text.out, label)) << text.out;
  }
}

TEST(Cli, PlanJsonAgreesWithTheGreedyPlanner) {
  const std::string file = kData + "/lifetimes_small.csv";
  const auto r = Cli({"plan", file, "--json", "--greedy"});
  ASSERT_EQ(r.status, 0) << r.err;
  const PlanCsv csv = ReadPlanCsvFile(file);
  const Plan plan = PlanGreedyBySize(csv.tensors);
  EXPECT_EQ(JsonNumber(r.out, "arena_bytes"), static_cast<double>(plan.arena_size));
  EXPECT_EQ(JsonNumber(r.out, "lower_bound_bytes"), static_cast<double>(LowerBound(csv.tensors)));
  EXPECT_EQ(JsonNumber(r.out, "tensors"), static_cast<double>(csv.tensors.size()));
  EXPECT_GE(JsonNumber(r.out, "seconds"), 0.0);
  EXPECT_TRUE(Contains(r.out, "\"valid\":true")) << r.out;

  const std::string dir = TempDir();
  const auto best = Cli({"plan", file, "--budget-ms", "200", "--write", dir + "/plan.csv"});
  ASSERT_EQ(best.status, 0) << best.err;
  for (const char* row : {"lower bound", "arena size", "ratio", "valid        "}) {
    EXPECT_TRUE(Contains(best.out, row)) << best.out;
  }
  // The written plan carries offsets that validate.
  const PlanCsv written = ReadPlanCsvFile(dir + "/plan.csv");
  ASSERT_TRUE(written.offsets.has_value());
  Plan reread;
  reread.offsets = *written.offsets;
  for (std::size_t i = 0; i < written.tensors.size(); ++i) {
    reread.arena_size = std::max(reread.arena_size, reread.offsets[i] + written.tensors[i].size);
  }
  EXPECT_EQ(ValidatePlan(written.tensors, reread), std::nullopt);

  // A file with offsets is also checked as given.
  const auto check = Cli({"plan", dir + "/plan.csv", "--json", "--greedy"});
  ASSERT_EQ(check.status, 0) << check.err;
  EXPECT_EQ(JsonNumber(check.out, "given_arena_bytes"), static_cast<double>(reread.arena_size));
  EXPECT_TRUE(Contains(check.out, "\"given_valid\":true")) << check.out;
}

#ifndef MEMARENA_SANITIZED
// Bytes from a "  in use   CURRENT   PEAK" row of the drop-in's stats table.
double PeakInUseFromStats(const std::string& stats) {
  const std::size_t row = stats.find("\n  in use");
  if (row == std::string::npos) return -1;
  std::istringstream line(stats.substr(row + 9, stats.find('\n', row + 1) - row - 9));
  double current = 0, peak = 0;
  std::string current_unit, peak_unit;
  line >> current >> current_unit >> peak >> peak_unit;
  const double scale = peak_unit == "MiB" ? 1 << 20 : peak_unit == "KiB" ? 1 << 10 : 1;
  return peak * scale;
}

// The drop-in replaces malloc in the child; a sanitizer runtime in it would fight it.
TEST(Cli, RunUsesTheDropInAndItsTraceReplaysToTheSamePeak) {
  const std::string trace = TempDir() + "/run.csv";
  const auto r = Cli({"run", "--trace", trace, "--", MEMARENA_WORKLOAD});
  EXPECT_EQ(r.status, 3) << r.err;  // the command's exit status
  EXPECT_EQ(r.out, "failed 0\n");
  ASSERT_TRUE(Contains(r.err, "memarena stats: host")) << r.err;
  EXPECT_TRUE(Contains(r.err, "memarena run: trace " + trace)) << r.err;
  const double run_peak = PeakInUseFromStats(r.err);
  ASSERT_GT(run_peak, 8 << 20) << r.err;

  const auto replay = Cli({"replay", trace, "--json"});
  ASSERT_EQ(replay.status, 0) << replay.err;
  // The trace opens when the drop-in reads MEMARENA_CONF, after the C++ runtime's first
  // allocations (its 72 KiB exception pool) and the drop-in's own config parsing (freed
  // later: "unknown" frees in the trace); those are the only difference.
  EXPECT_NEAR(JsonNumber(replay.out, "peak_in_use"), run_peak, 128 * 1024) << r.err;
  EXPECT_LE(JsonNumber(replay.out, "unknown_frees"), 8);
}

TEST(Cli, RunAppliesTheCeiling) {
  const auto r = Cli({"run", "--ceiling", "4MiB", "--", MEMARENA_WORKLOAD});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out, "failed 0\n");  // some of the 8 MiB did not fit under 4 MiB
  EXPECT_TRUE(Contains(r.err, "4.00 MiB")) << r.err;
  const auto bad = Cli({"run", "--", "/nonexistent-program"});
  EXPECT_EQ(bad.status, 127);
  EXPECT_TRUE(Contains(bad.err, "cannot run '/nonexistent-program'")) << bad.err;
}
#endif

TEST(Cli, DemoNeedsNoInputAndWritesItsReport) {
  const std::string dir = TempDir();
  const auto r = RunProcess({"sh", "-c", "cd '" + dir + "' && exec '" + MEMARENA_CLI +
                                             "' demo --cases 30 --requests 12 --batched-requests 20 --no-progress"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* part : {"1. test suite", "release after each test", "2. dynamic-shape inference",
                           "3. batched dynamic-shape inference", "bfc (kNextPowerOfTwo)",
                           "bfc (kSameAsRequested)", "bfc (expandable)", "planned",
                           "report written to memarena-demo.html"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << r.out;
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/memarena-demo.html"));
}

TEST(Cli, DemoMakesTheTracesFolder) {
  const std::string dir = TempDir() + "/traces/nested";
  const auto r = Cli({"demo", "--cases", "10", "--requests", "6", "--batched-requests", "8",
                      "--no-progress", "--out", TempDir() + "/demo.html", "--write-traces", dir});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* trace : {"test_suite.csv", "dynamic_shapes.csv", "batched_inference.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + trace)) << trace;
  }
}

// Issue 19's bar, on the arena's own accounting: the generated batched dynamic-shape trace
// (about 25k events, batch 1-16 x sequence 16-512, as `memarena demo --write-traces` writes
// it) replays through the expandable arena with peak held within 5% of peak requested,
// where the plain arena holds far more.
TEST(Cli, ExpandableArenaHoldsWithinFivePercentOfTheBatchedTracesPeak) {
  const std::string trace = TempDir() + "/batched_inference.csv";
  WriteTrace(trace, tools::BatchedInferenceScenario(280, 6, 2024).trace);
  const auto r = Cli({"replay", trace, "--allocator", "bfc", "--config", "expandable_segments:1", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(JsonNumber(r.out, "events"), 24000);
  EXPECT_EQ(JsonNumber(r.out, "ooms"), 0);
  EXPECT_LE(JsonNumber(r.out, "peak_held") / JsonNumber(r.out, "peak_requested"), 1.05) << r.out;
  const tools::ReplayResult plain = DirectReplay(trace, "bfc", "");
  EXPECT_GT(static_cast<double>(plain.peak_held) / static_cast<double>(plain.peak_requested), 1.5);
}

}  // namespace
}  // namespace memarena::testing
