// Device memory as the test guards see it: every device arena memarena knows, read together
// (held, in use, their peaks, the device's own used and total), released together, and the
// per-test record the gtest guard keeps of it.
#pragma once

#include <cstddef>
#include <optional>

namespace memarena {
class Allocator;
}

namespace memarena::testing {

// The device memory of every device allocator memarena knows, summed: each live BfcArena
// whose source is a device (found on its own), plus each allocator given to
// WatchDeviceAllocator. Wrappers over an arena (PlannedArena, tracing, limiting) are not
// counted again: their memory is held by the arena under them.
struct DeviceMemorySnapshot {
  std::size_t num_allocators = 0;
  std::size_t bytes_in_use = 0;
  std::size_t bytes_held = 0;
  std::size_t peak_bytes_in_use = 0;  // sum of each allocator's peak since its last reset
  std::size_t peak_bytes_held = 0;
  // The devices' own numbers (cudaMemGetInfo through MemorySource::Capacity), summed over
  // the distinct sources; empty when no source knows them.
  std::optional<std::size_t> device_used_bytes;
  std::optional<std::size_t> device_total_bytes;
};

// Reads every device allocator. Locks each one; not for hot paths.
DeviceMemorySnapshot ReadDeviceMemory();

// Restarts every device allocator's peaks from its current values.
void ResetDevicePeaks();

// Gives the free regions of every device allocator back to the device; returns the bytes.
std::size_t ReleaseDeviceMemory();

// Makes the guards read `allocator` (a device allocator that is not a BfcArena, such as an
// adaptor over another runtime's pool) until UnwatchDeviceAllocator. It must outlive the
// registration. Thread-safe.
void WatchDeviceAllocator(Allocator& allocator);
void UnwatchDeviceAllocator(Allocator& allocator) noexcept;

// What one test did to device memory (bytes, all device allocators together).
struct DeviceMemoryRecord {
  bool seen = false;                  // a device allocator existed during the test
  std::size_t held_at_start = 0;      // the baseline the test started from
  std::size_t peak_held = 0;          // the test's peak of held bytes
  std::size_t peak_in_use = 0;        // the test's peak of bytes in use
  std::size_t peak_growth = 0;        // peak_held - held_at_start
  std::size_t released = 0;           // given back by the release after it
  std::optional<std::size_t> device_used_at_end;   // the device's own count, when known
  std::optional<std::size_t> device_total;
};

}  // namespace memarena::testing
