// FakeDeviceRuntime: host memory as device memory, test-driven stream completion, CUDA's
// capture rules in global mode, per-thread streams, and injected failures.
#include "fake_device_runtime.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>

namespace memarena::cuda {
namespace {

constexpr DeviceResult kOk{};
constexpr DeviceResult kOom{DeviceErrorKind::kOutOfMemory, 2};
constexpr DeviceResult kSticky{DeviceErrorKind::kSticky, 700};
constexpr DeviceResult kNotReady{DeviceErrorKind::kNotReady, 600};
constexpr DeviceResult kInvalidValue{DeviceErrorKind::kOther, 1};
constexpr DeviceResult kInvalidDevice{DeviceErrorKind::kOther, 101};
constexpr DeviceResult kCaptureBroken{DeviceErrorKind::kCaptureInvalid, 901};

thread_local int current_device = 0;

// Every thread's per-thread stream gets its own key, (n << 2) | 3 as the real runtime's.
StreamKey ThisThreadsStreamKey() noexcept {
  static std::atomic<std::uintptr_t> next{1};
  thread_local const std::uintptr_t key = (next.fetch_add(1) << 2) | 3;
  return key;
}

}  // namespace

FakeDeviceRuntime::FakeDeviceRuntime(int devices, std::size_t device_bytes)
    : devices_(devices), device_bytes_(device_bytes) {}

FakeDeviceRuntime::~FakeDeviceRuntime() {
  for (auto& [ptr, size_device] : allocations_) std::free(ptr);
  for (auto& [address, bytes] : reservations_) std::free(reinterpret_cast<void*>(address));
}

void FakeDeviceRuntime::Launch(DeviceStream stream) {
  common::MutexLock lock(mutex_);
  ++StreamFor(stream).queued;
}

void FakeDeviceRuntime::CompleteAll(DeviceStream stream) {
  common::MutexLock lock(mutex_);
  Stream& s = StreamFor(stream);
  s.completed = s.queued;
}

void FakeDeviceRuntime::InjectOutOfMemory(int count) {
  common::MutexLock lock(mutex_);
  oom_left_ = count;
}

void FakeDeviceRuntime::InjectStickyError(int device) {
  common::MutexLock lock(mutex_);
  sticky_devices_.insert(device);
}

void FakeDeviceRuntime::FailSetDevice(bool fail) {
  common::MutexLock lock(mutex_);
  fail_set_device_ = fail;
}

void FakeDeviceRuntime::BeginCapture(DeviceStream stream, std::uint64_t capture_id) {
  common::MutexLock lock(mutex_);
  Stream& s = StreamFor(stream);
  s.capturing = true;
  s.invalidated = false;
  s.capture_id = capture_id;
}

bool FakeDeviceRuntime::EndCapture(DeviceStream stream) {
  common::MutexLock lock(mutex_);
  Stream& s = StreamFor(stream);
  const bool valid = s.capturing && !s.invalidated;
  s.capturing = false;
  s.invalidated = false;
  return valid;
}

FakeDeviceRuntime::Counters FakeDeviceRuntime::counters() const {
  common::MutexLock lock(mutex_);
  return counters_;
}

std::uint64_t FakeDeviceRuntime::live_events() const {
  common::MutexLock lock(mutex_);
  return events_.size();
}

bool FakeDeviceRuntime::Sticky() const noexcept {
  return sticky_devices_.count(current_device) != 0;
}

DeviceResult FakeDeviceRuntime::Fail() const noexcept { return Sticky() ? kSticky : kOk; }

bool FakeDeviceRuntime::TakeInjectedOom() noexcept {
  if (oom_left_ <= 0) return false;
  --oom_left_;
  return true;
}

FakeDeviceRuntime::Stream& FakeDeviceRuntime::StreamFor(DeviceStream stream) noexcept {
  return streams_[ResolveStream(stream)];
}

bool FakeDeviceRuntime::AnyCaptureActive() const noexcept {
  for (const auto& [key, s] : streams_) {
    if (s.capturing && !s.invalidated) return true;
  }
  return false;
}

void FakeDeviceRuntime::InvalidateActiveCaptures() noexcept {
  for (auto& [key, s] : streams_) {
    if (s.capturing) s.invalidated = true;
  }
}

std::size_t& FakeDeviceRuntime::UsedBytes(int device) noexcept { return used_bytes_[device]; }

DeviceResult FakeDeviceRuntime::DeviceCount(int* count) noexcept {
  *count = devices_;
  return kOk;
}

DeviceResult FakeDeviceRuntime::GetDevice(int* device) noexcept {
  common::MutexLock lock(mutex_);
  *device = current_device;
  return kOk;
}

DeviceResult FakeDeviceRuntime::SetDevice(int device) noexcept {
  common::MutexLock lock(mutex_);
  if (fail_set_device_ || device < 0 || device >= devices_) return kInvalidDevice;
  current_device = device;
  return kOk;
}

DeviceResult FakeDeviceRuntime::Malloc(void** ptr, std::size_t bytes) noexcept {
  common::MutexLock lock(mutex_);
  *ptr = nullptr;
  ++counters_.malloc_calls;
  if (Sticky()) return kSticky;
  std::size_t& used = UsedBytes(current_device);
  if (TakeInjectedOom() || bytes > device_bytes_ - used) return kOom;
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (p == nullptr) return kOom;
  allocations_[p] = {bytes, current_device};
  used += bytes;
  ++counters_.mallocs;
  counters_.bytes_allocated += bytes;
  *ptr = p;
  return kOk;
}

DeviceResult FakeDeviceRuntime::Free(void* ptr) noexcept {
  common::MutexLock lock(mutex_);
  if (Sticky()) return kSticky;
  const auto it = allocations_.find(ptr);
  if (it == allocations_.end()) return kInvalidValue;
  UsedBytes(it->second.second) -= it->second.first;
  counters_.bytes_allocated -= it->second.first;
  ++counters_.frees;
  std::free(ptr);
  allocations_.erase(it);
  return kOk;
}

DeviceResult FakeDeviceRuntime::MemGetInfo(std::size_t* free_bytes,
                                           std::size_t* total_bytes) noexcept {
  common::MutexLock lock(mutex_);
  if (Sticky()) return kSticky;
  *total_bytes = device_bytes_;
  *free_bytes = device_bytes_ - UsedBytes(current_device);
  return kOk;
}

DeviceResult FakeDeviceRuntime::StreamCreate(DeviceStream* stream) noexcept {
  common::MutexLock lock(mutex_);
  if (Sticky()) return kSticky;
  next_handle_ += 16;  // even, never 0, 1 or 2
  stream->value = next_handle_;
  streams_[stream->value] = Stream{};
  return kOk;
}

DeviceResult FakeDeviceRuntime::StreamDestroy(DeviceStream stream) noexcept {
  common::MutexLock lock(mutex_);
  return streams_.erase(stream.value) == 1 ? Fail() : kInvalidValue;
}

DeviceResult FakeDeviceRuntime::StreamSynchronize(DeviceStream stream) noexcept {
  common::MutexLock lock(mutex_);
  ++counters_.stream_syncs;
  if (Sticky()) return kSticky;
  if (AnyCaptureActive()) {
    InvalidateActiveCaptures();
    return kCaptureBroken;
  }
  Stream& s = StreamFor(stream);
  s.completed = s.queued;  // the fake's "wait": the test's pending work counts as done
  return kOk;
}

DeviceResult FakeDeviceRuntime::StreamQuery(DeviceStream stream) noexcept {
  common::MutexLock lock(mutex_);
  if (Sticky()) return kSticky;
  const Stream& s = StreamFor(stream);
  return s.completed >= s.queued ? kOk : kNotReady;
}

DeviceResult FakeDeviceRuntime::StreamCaptureStatus(DeviceStream stream, CaptureStatus* status,
                                                    std::uint64_t* capture_id) noexcept {
  common::MutexLock lock(mutex_);
  const Stream& s = StreamFor(stream);
  *status = !s.capturing ? CaptureStatus::kNone
            : s.invalidated ? CaptureStatus::kInvalidated
                            : CaptureStatus::kActive;
  if (capture_id != nullptr) *capture_id = s.capturing ? s.capture_id : 0;
  return Fail();
}

StreamKey FakeDeviceRuntime::ResolveStream(DeviceStream stream) noexcept {
  if (stream.value == 0) return kLegacyStream.value;
  if (stream == kPerThreadStream) return ThisThreadsStreamKey();
  return stream.value;
}

bool FakeDeviceRuntime::RecordableFromAnyThread(DeviceStream stream) noexcept {
  return !(stream == kPerThreadStream);
}

DeviceResult FakeDeviceRuntime::EventCreate(DeviceEvent* event) noexcept {
  common::MutexLock lock(mutex_);
  if (Sticky()) return kSticky;
  next_handle_ += 16;
  event->value = next_handle_;
  events_[event->value] = Event{};
  ++counters_.events_created;
  return kOk;
}

DeviceResult FakeDeviceRuntime::EventDestroy(DeviceEvent event) noexcept {
  common::MutexLock lock(mutex_);
  if (events_.erase(event.value) != 1) return kInvalidValue;
  ++counters_.events_destroyed;
  return Fail();
}

DeviceResult FakeDeviceRuntime::EventRecord(DeviceEvent event, DeviceStream stream) noexcept {
  common::MutexLock lock(mutex_);
  ++counters_.event_records;
  if (Sticky()) return kSticky;
  const auto it = events_.find(event.value);
  if (it == events_.end()) return kInvalidValue;
  Stream& s = StreamFor(stream);
  if (s.capturing) {  // the allocator must never put its own events into a user's graph
    s.invalidated = true;
    return kCaptureBroken;
  }
  it->second = Event{ResolveStream(stream), s.queued};
  return kOk;
}

DeviceResult FakeDeviceRuntime::EventQuery(DeviceEvent event) noexcept {
  common::MutexLock lock(mutex_);
  ++counters_.event_queries;
  if (Sticky()) return kSticky;
  if (AnyCaptureActive()) {  // cudaEventQuery is "unsafe" during a global-mode capture
    InvalidateActiveCaptures();
    return kCaptureBroken;
  }
  const auto it = events_.find(event.value);
  if (it == events_.end()) return kInvalidValue;
  const Event& e = it->second;
  return streams_[e.stream].completed >= e.mark ? kOk : kNotReady;
}

DeviceResult FakeDeviceRuntime::EventSynchronize(DeviceEvent event) noexcept {
  common::MutexLock lock(mutex_);
  if (Sticky()) return kSticky;
  if (AnyCaptureActive()) {
    InvalidateActiveCaptures();
    return kCaptureBroken;
  }
  const auto it = events_.find(event.value);
  if (it == events_.end()) return kInvalidValue;
  Stream& s = streams_[it->second.stream];
  if (s.completed < it->second.mark) s.completed = it->second.mark;
  return kOk;
}

void FakeDeviceRuntime::ClearLastError() noexcept {}

std::string FakeDeviceRuntime::ErrorText(DeviceResult result) const {
  switch (result.code) {
    case 0: return "cudaSuccess: no error";
    case 2: return "cudaErrorMemoryAllocation: out of memory";
    case 101: return "cudaErrorInvalidDevice: invalid device ordinal";
    case 600: return "cudaErrorNotReady: device not ready";
    case 700: return "cudaErrorIllegalAddress: an illegal memory access was encountered";
    case 901: return "cudaErrorStreamCaptureInvalidated: operation failed due to a previous "
                     "error during capture";
    default: return fmt::format("fake CUDA error {}", result.code);
  }
}

bool FakeDeviceRuntime::SupportsVirtualMemory(int device) noexcept {
  return device >= 0 && device < devices_;
}

DeviceResult FakeDeviceRuntime::MemGranularity(int device, bool, std::size_t* granularity) noexcept {
  if (device < 0 || device >= devices_) return kInvalidDevice;
  *granularity = kGranularity;
  common::MutexLock lock(mutex_);  // the sticky set changes under it (found by -Wthread-safety)
  return Fail();
}

DeviceResult FakeDeviceRuntime::MemAddressReserve(std::uintptr_t* address, std::size_t bytes,
                                                  std::size_t alignment) noexcept {
  common::MutexLock lock(mutex_);
  *address = 0;
  if (Sticky()) return kSticky;
  if (bytes == 0 || bytes % kGranularity != 0) return kInvalidValue;
  const std::size_t align = alignment > kGranularity ? alignment : kGranularity;
  void* p = std::aligned_alloc(align, bytes);  // address space the test may touch once mapped
  if (p == nullptr) return kOom;
  *address = reinterpret_cast<std::uintptr_t>(p);
  reservations_[*address] = bytes;
  return kOk;
}

DeviceResult FakeDeviceRuntime::MemAddressFree(std::uintptr_t address, std::size_t bytes) noexcept {
  common::MutexLock lock(mutex_);
  const auto it = reservations_.find(address);
  if (it == reservations_.end() || it->second != bytes) return kInvalidValue;
  const auto mapped = mappings_.lower_bound(address);
  if (mapped != mappings_.end() && mapped->first < address + bytes) return kInvalidValue;
  std::free(reinterpret_cast<void*>(address));
  reservations_.erase(it);
  return Fail();
}

DeviceResult FakeDeviceRuntime::MemCreate(DeviceMemHandle* handle, std::size_t bytes,
                                          int device) noexcept {
  common::MutexLock lock(mutex_);
  handle->value = 0;
  if (Sticky()) return kSticky;
  if (device < 0 || device >= devices_) return kInvalidDevice;
  if (bytes == 0 || bytes % kGranularity != 0) return kInvalidValue;
  std::size_t& used = UsedBytes(device);
  if (TakeInjectedOom() || bytes > device_bytes_ - used) return kOom;
  used += bytes;
  next_handle_ += 16;
  handle->value = next_handle_;
  physical_[handle->value] = Physical{bytes, device};
  return kOk;
}

DeviceResult FakeDeviceRuntime::MemRelease(DeviceMemHandle handle) noexcept {
  common::MutexLock lock(mutex_);
  const auto it = physical_.find(handle.value);
  if (it == physical_.end()) return kInvalidValue;
  UsedBytes(it->second.device) -= it->second.bytes;
  physical_.erase(it);
  return Fail();
}

DeviceResult FakeDeviceRuntime::MemMap(std::uintptr_t address, std::size_t bytes,
                                       DeviceMemHandle handle, std::size_t offset) noexcept {
  common::MutexLock lock(mutex_);
  if (Sticky()) return kSticky;
  const auto physical = physical_.find(handle.value);
  if (physical == physical_.end() || offset + bytes > physical->second.bytes) return kInvalidValue;
  const auto next = mappings_.lower_bound(address);
  if (next != mappings_.end() && next->first < address + bytes) return kInvalidValue;
  if (next != mappings_.begin() && std::prev(next)->first + std::prev(next)->second > address) {
    return kInvalidValue;
  }
  mappings_[address] = bytes;
  return kOk;
}

DeviceResult FakeDeviceRuntime::MemUnmap(std::uintptr_t address, std::size_t bytes) noexcept {
  common::MutexLock lock(mutex_);
  const auto it = mappings_.find(address);
  if (it == mappings_.end() || it->second != bytes) return kInvalidValue;
  mappings_.erase(it);
  return Fail();
}

DeviceResult FakeDeviceRuntime::MemSetAccess(std::uintptr_t address, std::size_t bytes,
                                             int device) noexcept {
  common::MutexLock lock(mutex_);
  if (device < 0 || device >= devices_) return kInvalidDevice;
  const auto it = mappings_.upper_bound(address);
  if (it == mappings_.begin() || std::prev(it)->first + std::prev(it)->second < address + bytes) {
    return kInvalidValue;
  }
  return Fail();
}

}  // namespace memarena::cuda
