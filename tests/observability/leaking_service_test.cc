// The service recipe's bar: a "service" leaks 1 MiB per request from one call site among
// sites that free what they take. The monitor flags growth within 10 intervals, the heap
// profile's top stack is the leaking site, and google-pprof --text prints it first.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "memarena/memarena.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr double kIntervalSeconds = 10.0;

std::vector<void*> g_leaked;
std::deque<void*> g_session_cache;  // bounded: old entries are freed

[[gnu::noinline]] void LeakOneMiBPerRequest() {
  g_leaked.push_back(memarena::HostAllocator().Allocate(kMiB));
}

[[gnu::noinline]] void ParseRequestScratch() {
  std::vector<void*> scratch;
  for (std::size_t i = 0; i < 512; ++i) scratch.push_back(memarena::HostAllocator().Allocate(4096));
  for (void* p : scratch) memarena::HostAllocator().Deallocate(p);
}

[[gnu::noinline]] void KeepBoundedSessionCache() {
  g_session_cache.push_back(memarena::HostAllocator().Allocate(256 * 1024));
  if (g_session_cache.size() > 16) {
    memarena::HostAllocator().Deallocate(g_session_cache.front());
    g_session_cache.pop_front();
  }
}

void ServeRequest(bool leak) {
  ParseRequestScratch();
  KeepBoundedSessionCache();
  // A worker thread's buffers come and go within the request.
  std::thread worker([] {
    void* buffer = memarena::HostAllocator().Allocate(2 * kMiB);
    memarena::HostAllocator().Deallocate(buffer);
  });
  worker.join();
  if (leak) LeakOneMiBPerRequest();
}

std::string RunCommand(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), &pclose);
  if (!pipe) return {};
  std::string out;
  std::array<char, 4096> buffer;
  while (std::size_t n = fread(buffer.data(), 1, buffer.size(), pipe.get())) out.append(buffer.data(), n);
  return out;
}

TEST(LeakingService, MonitorFlagsGrowthAndTheProfileNamesTheLeakingSite) {
  memarena::SetHeapSampleInterval(memarena::kDefaultHeapSampleInterval);
  double now = 0.0;
  // Without the leak: the session cache fills for 16 requests, then use is steady, which is
  // not growth.
  for (int request = 0; request < 32; ++request) {
    ServeRequest(false);
    const bool growing = memarena::MonitorSample(now += kIntervalSeconds).growing;
    if (request >= 24) {
      EXPECT_FALSE(growing) << "steady service flagged at request " << request;
    }
  }
  int flagged_after = 0;
  memarena::GrowthVerdict verdict;
  for (int request = 1; request <= 10 && flagged_after == 0; ++request) {
    ServeRequest(true);
    verdict = memarena::MonitorSample(now += kIntervalSeconds);
    if (verdict.growing) flagged_after = request;
  }
  ASSERT_NE(flagged_after, 0) << "no growth flagged within 10 intervals";
  std::printf("%s", memarena::FormatGrowthVerdict(verdict).c_str());
  // 1 MiB per 10 s is 360 MiB/hour; the window still holds a few flat samples.
  EXPECT_GT(verdict.bytes_per_hour / kMiB, 360.0 * 0.4);
  EXPECT_LE(verdict.bytes_per_hour / kMiB, 360.0 * 1.05);
  // The site that grew, by name: a 1 MiB block is sampled with probability 1 - e^-2 (0.86),
  // and when it is, no other site's net growth in that interval comes near it.
  int named = 0;
  for (int request = 0; request < 10; ++request) {  // 20 MiB leaked in all
    ServeRequest(true);
    const std::string site = memarena::MonitorSample(now += kIntervalSeconds).top_growing_site;
    if (site.find("LeakOneMiBPerRequest") != std::string::npos) ++named;
    if (request == 0) std::printf("top growing site: %s\n", site.c_str());
  }
  EXPECT_GE(named, 5) << "the leaking function was the top growing site in " << named << " of 10";

  const std::string profile = ::testing::TempDir() + "memarena_leak.heap";
  memarena::WriteHeapProfile(profile);
  const std::string binary = std::filesystem::read_symlink("/proc/self/exe");
  const std::string text =
      RunCommand("google-pprof --text '" + binary + "' '" + profile + "' 2>&1");
  std::printf("%s", text.c_str());
  ASSERT_NE(text.find("Total:"), std::string::npos)
      << "google-pprof (Debian google-perftools, installed by scripts/bootstrap.sh) did not "
         "read the profile:\n" << text;
  // The first row after "Total:" is the site holding the most live bytes.
  std::istringstream rows(text.substr(text.find("Total:")));
  std::string total_line, top_row;
  std::getline(rows, total_line);
  std::getline(rows, top_row);
  EXPECT_NE(top_row.find("LeakOneMiBPerRequest"), std::string::npos) << text;

  for (void* p : g_leaked) memarena::HostAllocator().Deallocate(p);
  for (void* p : g_session_cache) memarena::HostAllocator().Deallocate(p);
  memarena::SetHeapSampleInterval(0);
}

// Between two samples with nothing allocated or freed no site grew, so none is named. The
// estimates are fractional: summed as doubles, a stack's blocks now less the same blocks
// before left a residue of about 1e-10 bytes, named as "+0 B" growth.
TEST(Monitor, NamesNoGrowingSiteWhenNothingGrew) {
  memarena::SetHeapSampleInterval(4096);
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < 400; ++i) {
    blocks.push_back(memarena::HostAllocator().Allocate(100 + i * 37));
  }
  memarena::MonitorSample();
  for (int round = 0; round < 5; ++round) {
    const memarena::GrowthVerdict verdict = memarena::MonitorSample();
    EXPECT_EQ(verdict.top_growing_site, "") << "round " << round;
  }
  for (void* p : blocks) memarena::HostAllocator().Deallocate(p);
  memarena::SetHeapSampleInterval(0);
}

// The growth line gives the rise and the time it took before the rate per hour, which a
// short window extrapolates wildly (8 samples 20 ms apart under CPython's start-up read
// "49588.6 MiB/hour" alone).
TEST(Monitor, TheGrowthLineSaysWhatTheRateRestsOn) {
  memarena::GrowthVerdict verdict;
  verdict.growing = true;
  verdict.intervals = 8;
  verdict.window_rise_bytes = 2.5 * 1048576.0;
  verdict.window_seconds = 0.14;
  verdict.bytes_per_hour = verdict.window_rise_bytes / verdict.window_seconds * 3600.0;
  verdict.bytes_in_use = std::size_t{4} << 20;
  verdict.bytes_held = std::size_t{8} << 20;
  EXPECT_EQ(memarena::FormatGrowthVerdict(verdict),
            "memarena: growth: in use rose 2.50 MiB in 0.14 s over 8 intervals, 64285.7 "
            "MiB/hour (in use 4.00 MiB, held 8.00 MiB)\n");
  verdict.window_seconds = 750.0;
  EXPECT_NE(memarena::FormatGrowthVerdict(verdict).find("in 12.5 min over 8 intervals"),
            std::string::npos)
      << memarena::FormatGrowthVerdict(verdict);
}

TEST(Monitor, ThreadSamplesEachIntervalUntilStopped) {
  EXPECT_THROW(memarena::StartMonitor(std::chrono::milliseconds(0)), std::invalid_argument);
  const std::uint64_t before = memarena::LastGrowthVerdict().sample_number;
  memarena::StartMonitor(std::chrono::milliseconds(1));
  // Waits for the thread's samples, not for a time.
  while (memarena::LastGrowthVerdict().sample_number < before + 3) std::this_thread::yield();
  memarena::StopMonitor();
  const std::uint64_t stopped_at = memarena::LastGrowthVerdict().sample_number;
  EXPECT_GE(stopped_at, before + 3);
  EXPECT_GT(memarena::LastGrowthVerdict().intervals, 0u);
  memarena::StopMonitor();  // a second stop is a no-op
}

}  // namespace
