// memarena::StartMonitor: a background thread that samples the host allocator each
// interval, judges growth (common::GrowthDetector), and refreshes the configured heap
// profile and Prometheus file; MonitorSample lets a program take the samples itself.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include "common/growth_detector.h"
#include "common/helper_thread.h"
#include "common/mutex.h"
#include "host/heap.h"
#include "host/heap_sampler.h"
#include "host/monitor_outputs.h"
#include "memarena/observability.h"
#include "memarena/stats.h"
#include "platform/os.h"
#include "platform/symbolize.h"

namespace memarena {
namespace {

struct MonitorState {
  common::Mutex mutex;
  common::GrowthDetector detector MEMARENA_GUARDED_BY(mutex);
  GrowthVerdict last MEMARENA_GUARDED_BY(mutex);
  bool reported MEMARENA_GUARDED_BY(mutex) = false;  // growth already announced on stderr
  std::vector<host::sampler::Sample> previous_profile MEMARENA_GUARDED_BY(mutex);
};

MonitorState& State() {
  static auto* state = new MonitorState;  // never destroyed: the thread may outlive statics
  return *state;
}

struct MonitorThread {
  common::Mutex mutex;
  std::condition_variable_any wake;
  bool stop MEMARENA_GUARDED_BY(mutex) = false;
  std::thread thread;
  long owner_pid = platform::ProcessId();  // a forked child has the record, not the thread
};
common::Mutex g_thread_mutex;
MonitorThread* g_thread MEMARENA_GUARDED_BY(g_thread_mutex) = nullptr;

constexpr std::size_t kSiteFrames = 6;  // enough to tell a site; the profile has the rest

// "0.14 s", "80 s", "12.5 min".
std::string FormatSeconds(double seconds) {
  if (seconds < 10.0) return fmt::format("{:.2f} s", seconds);
  if (seconds < 600.0) return fmt::format("{:.0f} s", seconds);
  return fmt::format("{:.1f} min", seconds / 60.0);
}

// A sample's estimated live bytes, in whole bytes: summed as doubles, a stack's blocks now
// less the same blocks before left a residue of about 1e-10, named as "+0 B" growth.
std::int64_t WholeEstimate(const host::sampler::Sample& s, std::size_t mean) {
  return std::llround(host::sampler::EstimatedBytes(s.bytes, mean));
}

// The stack whose estimated live bytes rose most since the previous sample, its frames
// named (a return address minus one lies in the call, so in the calling function).
std::string TopGrowingSite(std::vector<host::sampler::Sample>& previous) {
  std::vector<host::sampler::Sample> now = host::sampler::Snapshot();
  const std::size_t mean = host::sampler::MeanInterval();
  std::map<std::vector<void*>, std::int64_t> growth;
  for (const auto& s : now) growth[{s.frames, s.frames + s.depth}] += WholeEstimate(s, mean);
  for (const auto& s : previous) growth[{s.frames, s.frames + s.depth}] -= WholeEstimate(s, mean);
  previous = std::move(now);
  const std::vector<void*>* best = nullptr;
  std::int64_t best_growth = 0;
  for (const auto& [stack, bytes] : growth) {
    if (bytes > best_growth) {
      best_growth = bytes;
      best = &stack;
    }
  }
  if (best == nullptr) return {};
  std::string site = fmt::format("+{}", FormatBytes(static_cast<std::size_t>(best_growth)));
  for (std::size_t i = 0; i < best->size() && i < kSiteFrames; ++i) {
    void* pc = (*best)[i];
    const std::string name = platform::SymbolizeAddress(static_cast<const char*>(pc) - 1);
    site += fmt::format("{}{}", i == 0 ? " " : " < ", name.empty() ? fmt::format("{}", pc) : name);
  }
  return site;
}

// Sleeps one interval; true when StopMonitor asked the thread to finish meanwhile.
bool StopRequested(MonitorThread* self, std::chrono::milliseconds interval) {
  common::MutexLock hold(self->mutex);
  const auto deadline = std::chrono::steady_clock::now() + interval;
  while (!self->stop) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    self->mutex.WaitFor(self->wake, deadline - now);  // a spurious wake loops
  }
  return true;
}

void RunMonitor(MonitorThread* self, std::chrono::milliseconds interval) {
  while (!StopRequested(self, interval)) {
    try {
      MonitorSample();
      host::WriteMonitorOutputs();
    } catch (const std::exception& e) {
      const std::string line = fmt::format("memarena: monitor: {}\n", e.what());
      platform::WriteStderr(line.data(), line.size());
    }
  }
}

}  // namespace

GrowthVerdict MonitorSample(double now_seconds) {
  if (now_seconds < 0.0) now_seconds = static_cast<double>(platform::NowNanos()) * 1e-9;
  const AllocatorStats stats = host::Stats();
  MonitorState& state = State();
  common::MutexLock hold(state.mutex);
  state.detector.Add(now_seconds, stats.bytes_in_use);
  GrowthVerdict verdict;
  verdict.growing = state.detector.Growing();
  verdict.bytes_per_hour = state.detector.BytesPerHour();
  verdict.window_rise_bytes = state.detector.WindowRise();
  verdict.window_seconds = state.detector.WindowSeconds();
  verdict.intervals = state.detector.Samples();
  verdict.sample_number = state.last.sample_number + 1;
  verdict.bytes_in_use = stats.bytes_in_use;
  verdict.bytes_held = stats.bytes_held;
  if (host::sampler::MeanInterval() != 0) {
    verdict.top_growing_site = TopGrowingSite(state.previous_profile);
  }
  if (verdict.growing && !state.reported) {
    const std::string line = FormatGrowthVerdict(verdict);
    platform::WriteStderr(line.data(), line.size());
  }
  state.reported = verdict.growing;
  state.last = verdict;
  return verdict;
}

GrowthVerdict LastGrowthVerdict() {
  MonitorState& state = State();
  common::MutexLock hold(state.mutex);
  return state.last;
}

std::string FormatGrowthVerdict(const GrowthVerdict& v) {
  if (!v.growing) {
    return fmt::format("memarena: growth: none over {} intervals (in use {}, held {})\n",
                       v.intervals, FormatBytes(v.bytes_in_use), FormatBytes(v.bytes_held));
  }
  // The rise and the time it took come first: a rate per hour extrapolated from a window of
  // a fraction of a second (a short interval, a program starting up) read as alarming alone.
  return fmt::format(
      "memarena: growth: in use rose {} in {} over {} intervals, {:.1f} MiB/hour (in use {}, "
      "held {}){}{}\n",
      FormatBytes(static_cast<std::size_t>(std::max(v.window_rise_bytes, 0.0))),
      FormatSeconds(v.window_seconds), v.intervals, v.bytes_per_hour / 1048576.0,
      FormatBytes(v.bytes_in_use), FormatBytes(v.bytes_held),
      v.top_growing_site.empty() ? "" : "; top growing site ", v.top_growing_site);
}

void StartMonitor(std::chrono::milliseconds interval) {
  if (interval < std::chrono::milliseconds(1)) {
    throw std::invalid_argument(fmt::format(
        "StartMonitor: interval {} ms is below the allowed minimum of 1 ms", interval.count()));
  }
  StopMonitor();
  common::MutexLock hold(g_thread_mutex);
  auto self = std::make_unique<MonitorThread>();
  MonitorThread* record = self.get();
  self->thread = common::StartHelperThread([record, interval] { RunMonitor(record, interval); });
  g_thread = self.release();
}

void StopMonitor() {
  common::MutexLock hold(g_thread_mutex);
  if (g_thread == nullptr) return;
  if (g_thread->owner_pid != platform::ProcessId()) {
    // A forked child: the thread stayed in the parent, and its record may hold a lock the
    // parent's thread held at the fork, so it is dropped untouched (never freed) instead.
    g_thread = nullptr;
    return;
  }
  {
    common::MutexLock wake(g_thread->mutex);
    g_thread->stop = true;
  }
  g_thread->wake.notify_all();
  g_thread->thread.join();
  delete g_thread;
  g_thread = nullptr;
}

}  // namespace memarena
