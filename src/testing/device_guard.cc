// The device half of the gtest guard: measure, budget and release device memory per test.
#include "testing/device_guard.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "memarena/stats.h"
#include "memarena/testing/gtest_listener.h"

namespace memarena::testing {

std::size_t StartDeviceMeasurement() {
  ResetDevicePeaks();
  return ReadDeviceMemory().bytes_held;
}

void FinishDeviceMeasurement(TestMemoryRecord& record, std::size_t held_at_start,
                             std::size_t budget, bool release) {
  const DeviceMemorySnapshot s = ReadDeviceMemory();
  DeviceMemoryRecord& d = record.device;
  d.seen = s.num_allocators != 0;
  d.held_at_start = held_at_start;
  // An arena destroyed during the test takes its peak with it; the start is a floor.
  d.peak_held = std::max(s.peak_bytes_held, held_at_start);
  d.peak_in_use = s.peak_bytes_in_use;
  d.peak_growth = d.peak_held - held_at_start;
  d.device_used_at_end = s.device_used_bytes;
  d.device_total = s.device_total_bytes;
  if (budget != 0 && d.peak_growth > budget) {
    record.over_budget = true;
    ADD_FAILURE() << fmt::format(
        "memarena: {} took device memory held to a peak of {} (in use {}) from a baseline of "
        "{} at its start: {} more, over its device budget of {} "
        "(MEMARENA_TEST_DEVICE_BUDGET or SetTestDevicePeakBudget)",
        record.name, FormatBytes(d.peak_held), FormatBytes(d.peak_in_use),
        FormatBytes(held_at_start), FormatBytes(d.peak_growth), FormatBytes(budget));
  }
  if (release) d.released = ReleaseDeviceMemory();
}

std::string DeviceColumnsHeader() {
  return fmt::format(" | {:>12} {:>12} {:>12} {:>12}", "dev baseline", "dev peak", "dev growth",
                     "dev released");
}

std::string DeviceColumns(const DeviceMemoryRecord& device) {
  if (!device.seen) return fmt::format(" | {:>12} {:>12} {:>12} {:>12}", "-", "-", "-", "-");
  return fmt::format(" | {:>12} {:>12} {:>12} {:>12}", FormatBytes(device.held_at_start),
                     FormatBytes(device.peak_held), FormatBytes(device.peak_growth),
                     FormatBytes(device.released));
}

std::string DeviceUsedLine(const std::vector<TestMemoryRecord>& records) {
  const TestMemoryRecord* most = nullptr;
  for (const auto& r : records) {
    if (!r.device.device_used_at_end || !r.device.device_total) continue;
    if (most == nullptr || *r.device.device_used_at_end > *most->device.device_used_at_end) most = &r;
  }
  if (most == nullptr) return {};
  const std::size_t used = *most->device.device_used_at_end;
  const std::size_t total = *most->device.device_total;
  return fmt::format(
      "[ memarena ] device used (the runtime's count) at most {} of {}, at the end of {}: {} of headroom\n",
      FormatBytes(used), FormatBytes(total), most->name, FormatBytes(total - std::min(used, total)));
}

}  // namespace memarena::testing
