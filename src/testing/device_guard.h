// The device half of the gtest guard: per-test device measurement, the device budget check
// and the device columns of the heaviest-tests table. Kept apart from the host half so each
// can change alone.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "memarena/testing/device_memory.h"

namespace memarena::testing {

struct TestMemoryRecord;

// Resets the device peaks; returns the device bytes held now (the test's baseline).
std::size_t StartDeviceMeasurement();

// Fills record.device for the test that started at `held_at_start`, adds a failure to the
// running test when its device peak growth exceeds `budget` (0 = none) and sets
// record.over_budget, then releases free device memory when `release` is set.
void FinishDeviceMeasurement(TestMemoryRecord& record, std::size_t held_at_start,
                             std::size_t budget, bool release);

// The header and a row of the device columns of the heaviest-tests table.
std::string DeviceColumnsHeader();
std::string DeviceColumns(const DeviceMemoryRecord& device);

// The line under the table with the most device memory in use by the device's own count
// (cudaMemGetInfo) at any test's end and the headroom left; empty when no source knew it.
std::string DeviceUsedLine(const std::vector<TestMemoryRecord>& records);

}  // namespace memarena::testing
