// The device runtime seam: every CUDA runtime and driver call the backend makes, behind one
// small interface with opaque handles, so the backend logic builds and runs without CUDA.
//
// No CUDA header here or in anything that includes only this file. The real implementation
// (cuda_runtime_impl.cc, cudart plus cuMem* through cudaGetDriverEntryPoint) is the only file
// that includes <cuda_runtime_api.h>; FakeDeviceRuntime (fake_device_runtime.h) stands in for
// it in the device-logic tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace memarena::cuda {

// A cudaStream_t as an integer. The special values are CUDA's own: 0 the default stream (the
// legacy one unless compiled with per-thread default streams), 1 cudaStreamLegacy,
// 2 cudaStreamPerThread (a different stream in every thread: see ResolveStream).
struct DeviceStream {
  std::uintptr_t value = 0;
  friend bool operator==(DeviceStream, DeviceStream) = default;
};
inline constexpr DeviceStream kLegacyStream{1};
inline constexpr DeviceStream kPerThreadStream{2};

// A cudaEvent_t as an integer (0 = none).
struct DeviceEvent {
  std::uintptr_t value = 0;
  friend bool operator==(DeviceEvent, DeviceEvent) = default;
};

// A CUmemGenericAllocationHandle (physical memory of the virtual-memory API; 0 = none).
struct DeviceMemHandle {
  std::uint64_t value = 0;
  friend bool operator==(DeviceMemHandle, DeviceMemHandle) = default;
};

// What a call's status means to the backend. Only kOutOfMemory is "out of memory"
// (cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY): only it may be retried after
// releasing memory. kSticky means the context is corrupted (illegal address, launch failure,
// ...): every later call fails too, so it is reported at once and never retried.
// kCaptureInvalid means the call is not allowed while a stream is being captured.
enum class DeviceErrorKind { kSuccess, kNotReady, kOutOfMemory, kSticky, kCaptureInvalid,
                             kNoDevice, kOther };

// A call's result: the kind, the runtime's numeric code (cudaError_t / CUresult) for messages.
struct DeviceResult {
  DeviceErrorKind kind = DeviceErrorKind::kSuccess;
  int code = 0;
  bool ok() const noexcept { return kind == DeviceErrorKind::kSuccess; }
};

// cudaStreamCaptureStatus.
enum class CaptureStatus { kNone, kActive, kInvalidated };

// The key under which the backend tracks a stream: the same for every use of one stream,
// different for different streams. Equals DeviceStream::value for ordinary streams; for the
// per-thread default stream it is the calling thread's own stream.
using StreamKey = std::uintptr_t;

// The contract: every call is noexcept and thread-safe, costs one runtime call (or none for
// the fake), and never changes the calling thread's current device except SetDevice. Calls
// with a device argument act on that device. Errors are returned, never thrown.
class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  // --- devices ---------------------------------------------------------------------------
  // Any failure (no driver, driver too old) is kNoDevice; *count is then 0.
  virtual DeviceResult DeviceCount(int* count) noexcept = 0;
  virtual DeviceResult GetDevice(int* device) noexcept = 0;
  virtual DeviceResult SetDevice(int device) noexcept = 0;

  // --- memory (cudaMalloc / cudaFree / cudaMemGetInfo on the current device) --------------
  // Allowed during a capture in any mode: the real runtime switches the calling thread to
  // relaxed capture mode around cudaMalloc, as PyTorch's allocator does.
  virtual DeviceResult Malloc(void** ptr, std::size_t bytes) noexcept = 0;
  virtual DeviceResult Free(void* ptr) noexcept = 0;
  virtual DeviceResult MemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) noexcept = 0;

  // --- streams ---------------------------------------------------------------------------
  virtual DeviceResult StreamCreate(DeviceStream* stream) noexcept = 0;  // non-blocking flag
  virtual DeviceResult StreamDestroy(DeviceStream stream) noexcept = 0;
  virtual DeviceResult StreamSynchronize(DeviceStream stream) noexcept = 0;
  // kSuccess when all queued work has completed, kNotReady when not.
  virtual DeviceResult StreamQuery(DeviceStream stream) noexcept = 0;
  // cudaStreamIsCapturing; with `capture_id` also the capture's id (cudaStreamGetCaptureInfo).
  virtual DeviceResult StreamCaptureStatus(DeviceStream stream, CaptureStatus* status,
                                           std::uint64_t* capture_id = nullptr) noexcept = 0;
  // The key of `stream` as seen from the calling thread: kPerThreadStream (and 0 when the
  // default stream is per-thread) map to this thread's own stream, never to one shared key.
  virtual StreamKey ResolveStream(DeviceStream stream) noexcept = 0;
  // True when an event may be recorded on `stream` from any thread (false for the
  // per-thread stream, whose handle means another stream in another thread).
  virtual bool RecordableFromAnyThread(DeviceStream stream) noexcept = 0;

  // --- events (timing disabled) ----------------------------------------------------------
  virtual DeviceResult EventCreate(DeviceEvent* event) noexcept = 0;
  virtual DeviceResult EventDestroy(DeviceEvent event) noexcept = 0;
  virtual DeviceResult EventRecord(DeviceEvent event, DeviceStream stream) noexcept = 0;
  // kSuccess once the recorded work completed, kNotReady before; an error otherwise.
  virtual DeviceResult EventQuery(DeviceEvent event) noexcept = 0;
  virtual DeviceResult EventSynchronize(DeviceEvent event) noexcept = 0;

  // --- errors ----------------------------------------------------------------------------
  // Clears the thread's last (non-sticky) error, as cudaGetLastError does.
  virtual void ClearLastError() noexcept = 0;
  // "cudaErrorMemoryAllocation: out of memory" for a result's code.
  virtual std::string ErrorText(DeviceResult result) const = 0;

  // --- virtual memory (cuMem*; the driver API through cudaGetDriverEntryPoint) ------------
  // Whether the device supports the virtual-memory API (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_
  // MANAGEMENT_SUPPORTED); a runtime without it returns kOther from every call below.
  virtual bool SupportsVirtualMemory(int device) noexcept = 0;
  // cuMemGetAllocationGranularity for pinned device memory on `device`; `recommended` picks
  // CU_MEM_ALLOC_GRANULARITY_RECOMMENDED over _MINIMUM.
  virtual DeviceResult MemGranularity(int device, bool recommended,
                                      std::size_t* granularity) noexcept = 0;
  // cuMemAddressReserve / cuMemAddressFree: a range of virtual addresses, no memory behind it.
  virtual DeviceResult MemAddressReserve(std::uintptr_t* address, std::size_t bytes,
                                         std::size_t alignment) noexcept = 0;
  virtual DeviceResult MemAddressFree(std::uintptr_t address, std::size_t bytes) noexcept = 0;
  // cuMemCreate / cuMemRelease: `bytes` (a multiple of the granularity) of physical memory
  // on `device`. kOutOfMemory when the device has not enough left.
  virtual DeviceResult MemCreate(DeviceMemHandle* handle, std::size_t bytes,
                                 int device) noexcept = 0;
  virtual DeviceResult MemRelease(DeviceMemHandle handle) noexcept = 0;
  // cuMemMap / cuMemUnmap of [address, address + bytes) onto `handle` from `offset`.
  virtual DeviceResult MemMap(std::uintptr_t address, std::size_t bytes, DeviceMemHandle handle,
                              std::size_t offset) noexcept = 0;
  virtual DeviceResult MemUnmap(std::uintptr_t address, std::size_t bytes) noexcept = 0;
  // cuMemSetAccess: read-write access for `device` on a mapped range.
  virtual DeviceResult MemSetAccess(std::uintptr_t address, std::size_t bytes,
                                    int device) noexcept = 0;
};

// The runtime the backend uses: the one given to SetDeviceRuntime, else the process default
// (the real CUDA runtime in libmemarena_cuda.so; a runtime that reports "no device" in a
// build without CUDA). Never null. Thread-safe.
std::shared_ptr<DeviceRuntime> GetDeviceRuntime();

// Replaces the runtime for what is created afterwards (tests install a FakeDeviceRuntime
// before the first allocation); nullptr restores the default. Arenas created before keep the
// runtime they were created with.
void SetDeviceRuntime(std::shared_ptr<DeviceRuntime> runtime);

// The process default; defined once per link (the real runtime, or the no-device one).
std::shared_ptr<DeviceRuntime> MakeDefaultDeviceRuntime();

}  // namespace memarena::cuda
