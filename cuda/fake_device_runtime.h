// FakeDeviceRuntime: the device runtime seam on host memory, for the device-logic tests.
// Streams complete only when the test says so, events follow their stream, captures and
// per-thread streams behave as CUDA's, and failures (out of memory, sticky errors, a failing
// cudaSetDevice) are injected on demand. Counters let tests assert what the backend called.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>

#include "common/mutex.h"
#include "device_runtime.h"

namespace memarena::cuda {

class FakeDeviceRuntime final : public DeviceRuntime {
 public:
  // One device per entry of `device_bytes`: how much memory each device has.
  explicit FakeDeviceRuntime(int devices = 1, std::size_t device_bytes = std::size_t{1} << 30);
  ~FakeDeviceRuntime() override;

  // --- what tests control ----------------------------------------------------------------
  // Queues one unit of work on `stream` (a kernel still running).
  void Launch(DeviceStream stream);
  // Completes every unit queued so far on `stream`.
  void CompleteAll(DeviceStream stream);
  // The next `count` Malloc/MemCreate calls fail with out of memory.
  void InjectOutOfMemory(int count);
  // From now on every call on `device` fails with a sticky error (illegal address), as after
  // a bad kernel there.
  void InjectStickyError(int device);
  // SetDevice fails while `fail` is true.
  void FailSetDevice(bool fail);
  // cudaStreamBeginCapture / EndCapture in global mode: while a capture is active, event
  // queries and synchronizations from any thread, and an event record on the capturing
  // stream, invalidate it (as CUDA does).
  void BeginCapture(DeviceStream stream, std::uint64_t capture_id);
  // Ends the capture; returns false when it was invalidated.
  bool EndCapture(DeviceStream stream);

  struct Counters {
    std::uint64_t malloc_calls = 0, mallocs = 0, frees = 0, events_created = 0, events_destroyed = 0,
                  event_records = 0, event_queries = 0, stream_syncs = 0;
    std::size_t bytes_allocated = 0;
  };
  Counters counters() const;
  std::uint64_t live_events() const;

  // --- DeviceRuntime ---------------------------------------------------------------------
  DeviceResult DeviceCount(int* count) noexcept override;
  DeviceResult GetDevice(int* device) noexcept override;
  DeviceResult SetDevice(int device) noexcept override;
  DeviceResult Malloc(void** ptr, std::size_t bytes) noexcept override;
  DeviceResult Free(void* ptr) noexcept override;
  DeviceResult MemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) noexcept override;
  DeviceResult StreamCreate(DeviceStream* stream) noexcept override;
  DeviceResult StreamDestroy(DeviceStream stream) noexcept override;
  DeviceResult StreamSynchronize(DeviceStream stream) noexcept override;
  DeviceResult StreamQuery(DeviceStream stream) noexcept override;
  DeviceResult StreamCaptureStatus(DeviceStream stream, CaptureStatus* status,
                                   std::uint64_t* capture_id) noexcept override;
  StreamKey ResolveStream(DeviceStream stream) noexcept override;
  bool RecordableFromAnyThread(DeviceStream stream) noexcept override;
  DeviceResult EventCreate(DeviceEvent* event) noexcept override;
  DeviceResult EventDestroy(DeviceEvent event) noexcept override;
  DeviceResult EventRecord(DeviceEvent event, DeviceStream stream) noexcept override;
  DeviceResult EventQuery(DeviceEvent event) noexcept override;
  DeviceResult EventSynchronize(DeviceEvent event) noexcept override;
  void ClearLastError() noexcept override;
  std::string ErrorText(DeviceResult result) const override;
  bool SupportsVirtualMemory(int device) noexcept override;
  DeviceResult MemGranularity(int device, bool recommended,
                              std::size_t* granularity) noexcept override;
  DeviceResult MemAddressReserve(std::uintptr_t* address, std::size_t bytes,
                                 std::size_t alignment) noexcept override;
  DeviceResult MemAddressFree(std::uintptr_t address, std::size_t bytes) noexcept override;
  DeviceResult MemCreate(DeviceMemHandle* handle, std::size_t bytes, int device) noexcept override;
  DeviceResult MemRelease(DeviceMemHandle handle) noexcept override;
  DeviceResult MemMap(std::uintptr_t address, std::size_t bytes, DeviceMemHandle handle,
                      std::size_t offset) noexcept override;
  DeviceResult MemUnmap(std::uintptr_t address, std::size_t bytes) noexcept override;
  DeviceResult MemSetAccess(std::uintptr_t address, std::size_t bytes, int device) noexcept override;

  static constexpr std::size_t kGranularity = std::size_t{2} << 20;

 private:
  struct Stream {
    std::uint64_t queued = 0;
    std::uint64_t completed = 0;
    bool capturing = false;
    bool invalidated = false;
    std::uint64_t capture_id = 0;
  };
  struct Event {
    StreamKey stream = 0;
    std::uint64_t mark = 0;
  };
  struct Physical {
    std::size_t bytes = 0;
    int device = 0;
  };

  // The current device hit a sticky error.
  bool Sticky() const noexcept MEMARENA_REQUIRES(mutex_);
  // The sticky error when injected, else success.
  DeviceResult Fail() const noexcept MEMARENA_REQUIRES(mutex_);
  bool TakeInjectedOom() noexcept MEMARENA_REQUIRES(mutex_);
  Stream& StreamFor(DeviceStream stream) noexcept MEMARENA_REQUIRES(mutex_);
  void InvalidateActiveCaptures() noexcept MEMARENA_REQUIRES(mutex_);
  bool AnyCaptureActive() const noexcept MEMARENA_REQUIRES(mutex_);
  std::size_t& UsedBytes(int device) noexcept MEMARENA_REQUIRES(mutex_);

  mutable common::Mutex mutex_;
  int devices_;
  std::size_t device_bytes_;
  std::map<int, std::size_t> used_bytes_ MEMARENA_GUARDED_BY(mutex_);
  std::unordered_map<void*, std::pair<std::size_t, int>> allocations_ MEMARENA_GUARDED_BY(mutex_);
  std::unordered_map<StreamKey, Stream> streams_ MEMARENA_GUARDED_BY(mutex_);
  std::unordered_map<std::uintptr_t, Event> events_ MEMARENA_GUARDED_BY(mutex_);
  std::unordered_map<std::uintptr_t, std::size_t> reservations_ MEMARENA_GUARDED_BY(mutex_);
  std::unordered_map<std::uint64_t, Physical> physical_ MEMARENA_GUARDED_BY(mutex_);
  std::map<std::uintptr_t, std::size_t> mappings_ MEMARENA_GUARDED_BY(mutex_);
  std::uintptr_t next_handle_ MEMARENA_GUARDED_BY(mutex_) = 0x1000;
  int oom_left_ MEMARENA_GUARDED_BY(mutex_) = 0;
  std::set<int> sticky_devices_ MEMARENA_GUARDED_BY(mutex_);
  bool fail_set_device_ MEMARENA_GUARDED_BY(mutex_) = false;
  Counters counters_ MEMARENA_GUARDED_BY(mutex_);
};

}  // namespace memarena::cuda
