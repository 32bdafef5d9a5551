// The real DeviceRuntime: cudart for devices, memory, streams and events; the driver's cuMem*
// virtual-memory calls through cudaGetDriverEntryPointByVersion (libcuda is never linked).
// The only backend file that includes a CUDA header.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <mutex>

#include "device_runtime.h"

namespace memarena::cuda {
namespace {

// cudaError_t and CUresult share the codes the backend distinguishes (2, 600, 700..., 900...).
DeviceErrorKind Classify(int code) noexcept {
  switch (code) {
    case cudaSuccess: return DeviceErrorKind::kSuccess;
    case cudaErrorNotReady: return DeviceErrorKind::kNotReady;
    case cudaErrorMemoryAllocation: return DeviceErrorKind::kOutOfMemory;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed: return DeviceErrorKind::kSticky;
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorStreamCaptureWrongThread:
    case cudaErrorCapturedEvent: return DeviceErrorKind::kCaptureInvalid;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: return DeviceErrorKind::kNoDevice;
    default: return DeviceErrorKind::kOther;
  }
}

DeviceResult Result(int code) noexcept { return {Classify(code), code}; }

cudaStream_t Cuda(DeviceStream s) noexcept { return reinterpret_cast<cudaStream_t>(s.value); }
cudaEvent_t Cuda(DeviceEvent e) noexcept { return reinterpret_cast<cudaEvent_t>(e.value); }

// cudaStreamCreateWithFlags / cudaEventCreateWithFlags into an opaque handle.
template <typename Raw, typename Opaque>
DeviceResult Create(cudaError_t (*create)(Raw*, unsigned int), unsigned int flags,
                    Opaque* out) noexcept {
  Raw raw = nullptr;
  const cudaError_t status = create(&raw, flags);
  out->value = reinterpret_cast<std::uintptr_t>(raw);
  return Result(status);
}

// The cuMem* entry points, looked up once. Missing ones stay null (driver without VMM).
struct DriverVmm {
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuMemAddressReserve) address_reserve = nullptr;
  decltype(&::cuMemAddressFree) address_free = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;

  bool complete() const noexcept {
    return device_get_attribute && granularity && address_reserve && address_free && create &&
           release && map && unmap && set_access;
  }
};

template <typename Fn>
void Lookup(const char* symbol, Fn* fn) noexcept {
  void* raw = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(symbol, &raw, 12000, cudaEnableDefault, &found) ==
          cudaSuccess &&
      found == cudaDriverEntryPointSuccess) {
    *fn = reinterpret_cast<Fn>(raw);
  } else {
    cudaGetLastError();
  }
}

constexpr DeviceResult kNoVmm{DeviceErrorKind::kOther, cudaErrorNotSupported};

CUmemAllocationProp DeviceProp(int device) noexcept {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

class CudaRuntime final : public DeviceRuntime {
 public:
  DeviceResult DeviceCount(int* count) noexcept override {
    const cudaError_t status = cudaGetDeviceCount(count);
    if (status != cudaSuccess) {
      cudaGetLastError();
      *count = 0;
      return {DeviceErrorKind::kNoDevice, status};
    }
    return {};
  }
  DeviceResult GetDevice(int* device) noexcept override { return Result(cudaGetDevice(device)); }
  DeviceResult SetDevice(int device) noexcept override { return Result(cudaSetDevice(device)); }

  DeviceResult Malloc(void** ptr, std::size_t bytes) noexcept override {
    // As PyTorch: relaxed mode lets cudaMalloc run while another thread captures globally.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    const cudaError_t status = cudaMalloc(ptr, bytes);
    cudaThreadExchangeStreamCaptureMode(&mode);
    return Result(status);
  }
  DeviceResult Free(void* ptr) noexcept override { return Result(cudaFree(ptr)); }
  DeviceResult MemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) noexcept override {
    return Result(cudaMemGetInfo(free_bytes, total_bytes));
  }

  DeviceResult StreamCreate(DeviceStream* stream) noexcept override {
    return Create(&cudaStreamCreateWithFlags, cudaStreamNonBlocking, stream);
  }
  DeviceResult StreamDestroy(DeviceStream s) noexcept override {
    return Result(cudaStreamDestroy(Cuda(s)));
  }
  DeviceResult StreamSynchronize(DeviceStream s) noexcept override {
    return Result(cudaStreamSynchronize(Cuda(s)));
  }
  DeviceResult StreamQuery(DeviceStream s) noexcept override {
    return Result(cudaStreamQuery(Cuda(s)));
  }
  DeviceResult StreamCaptureStatus(DeviceStream s, CaptureStatus* status,
                                   std::uint64_t* capture_id) noexcept override {
    cudaStreamCaptureStatus raw = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    const cudaError_t result = cudaStreamGetCaptureInfo(Cuda(s), &raw, &id);
    *status = raw == cudaStreamCaptureStatusActive        ? CaptureStatus::kActive
              : raw == cudaStreamCaptureStatusInvalidated ? CaptureStatus::kInvalidated
                                                          : CaptureStatus::kNone;
    if (capture_id != nullptr) *capture_id = id;
    return Result(result);
  }
  StreamKey ResolveStream(DeviceStream s) noexcept override {
    if (s.value == 0) return kLegacyStream.value;  // callers compiled without per-thread default
    if (!(s == kPerThreadStream)) return s.value;
    // Stream ids are unique per stream; (id << 2) | 3 never equals a pointer or 1.
    unsigned long long id = 0;
    if (cudaStreamGetId(cudaStreamPerThread, &id) != cudaSuccess) {
      cudaGetLastError();
      return s.value;
    }
    return static_cast<StreamKey>((id << 2) | 3);
  }
  bool RecordableFromAnyThread(DeviceStream s) noexcept override {
    return !(s == kPerThreadStream);
  }

  DeviceResult EventCreate(DeviceEvent* event) noexcept override {
    return Create(&cudaEventCreateWithFlags, cudaEventDisableTiming, event);
  }
  DeviceResult EventDestroy(DeviceEvent e) noexcept override {
    return Result(cudaEventDestroy(Cuda(e)));
  }
  DeviceResult EventRecord(DeviceEvent e, DeviceStream s) noexcept override {
    return Result(cudaEventRecord(Cuda(e), Cuda(s)));
  }
  DeviceResult EventQuery(DeviceEvent e) noexcept override {
    return Result(cudaEventQuery(Cuda(e)));
  }
  DeviceResult EventSynchronize(DeviceEvent e) noexcept override {
    return Result(cudaEventSynchronize(Cuda(e)));
  }

  void ClearLastError() noexcept override { cudaGetLastError(); }
  std::string ErrorText(DeviceResult r) const override {
    const auto status = static_cast<cudaError_t>(r.code);
    return fmt::format("{}: {}", cudaGetErrorName(status), cudaGetErrorString(status));
  }

  bool SupportsVirtualMemory(int device) noexcept override {
    const DriverVmm& vmm = Vmm();
    if (!vmm.complete()) return false;
    int supported = 0;
    return vmm.device_get_attribute(&supported,
                                    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                    device) == CUDA_SUCCESS &&
           supported != 0;
  }
  DeviceResult MemGranularity(int device, bool recommended,
                              std::size_t* granularity) noexcept override {
    if (!Vmm().complete()) return kNoVmm;
    const CUmemAllocationProp prop = DeviceProp(device);
    return Result(Vmm().granularity(granularity, &prop,
                                    recommended ? CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
                                                : CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  }
  DeviceResult MemAddressReserve(std::uintptr_t* address, std::size_t bytes,
                                 std::size_t alignment) noexcept override {
    if (!Vmm().complete()) return kNoVmm;
    CUdeviceptr ptr = 0;
    const CUresult status = Vmm().address_reserve(&ptr, bytes, alignment, 0, 0);
    *address = static_cast<std::uintptr_t>(ptr);
    return Result(status);
  }
  DeviceResult MemAddressFree(std::uintptr_t address, std::size_t bytes) noexcept override {
    if (!Vmm().complete()) return kNoVmm;
    return Result(Vmm().address_free(static_cast<CUdeviceptr>(address), bytes));
  }
  DeviceResult MemCreate(DeviceMemHandle* handle, std::size_t bytes,
                         int device) noexcept override {
    if (!Vmm().complete()) return kNoVmm;
    const CUmemAllocationProp prop = DeviceProp(device);
    CUmemGenericAllocationHandle h = 0;
    const CUresult status = Vmm().create(&h, bytes, &prop, 0);
    handle->value = static_cast<std::uint64_t>(h);
    return Result(status);
  }
  DeviceResult MemRelease(DeviceMemHandle handle) noexcept override {
    if (!Vmm().complete()) return kNoVmm;
    return Result(Vmm().release(static_cast<CUmemGenericAllocationHandle>(handle.value)));
  }
  DeviceResult MemMap(std::uintptr_t address, std::size_t bytes, DeviceMemHandle handle,
                      std::size_t offset) noexcept override {
    if (!Vmm().complete()) return kNoVmm;
    return Result(Vmm().map(static_cast<CUdeviceptr>(address), bytes, offset,
                            static_cast<CUmemGenericAllocationHandle>(handle.value), 0));
  }
  DeviceResult MemUnmap(std::uintptr_t address, std::size_t bytes) noexcept override {
    if (!Vmm().complete()) return kNoVmm;
    return Result(Vmm().unmap(static_cast<CUdeviceptr>(address), bytes));
  }
  DeviceResult MemSetAccess(std::uintptr_t address, std::size_t bytes,
                            int device) noexcept override {
    if (!Vmm().complete()) return kNoVmm;
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = device;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return Result(Vmm().set_access(static_cast<CUdeviceptr>(address), bytes, &desc, 1));
  }

 private:
  const DriverVmm& Vmm() noexcept {
    std::call_once(vmm_once_, [this] {
      Lookup("cuDeviceGetAttribute", &vmm_.device_get_attribute);
      Lookup("cuMemGetAllocationGranularity", &vmm_.granularity);
      Lookup("cuMemAddressReserve", &vmm_.address_reserve);
      Lookup("cuMemAddressFree", &vmm_.address_free);
      Lookup("cuMemCreate", &vmm_.create);
      Lookup("cuMemRelease", &vmm_.release);
      Lookup("cuMemMap", &vmm_.map);
      Lookup("cuMemUnmap", &vmm_.unmap);
      Lookup("cuMemSetAccess", &vmm_.set_access);
    });
    return vmm_;
  }

  std::once_flag vmm_once_;
  DriverVmm vmm_;
};

}  // namespace

std::shared_ptr<DeviceRuntime> MakeDefaultDeviceRuntime() {
  return std::make_shared<CudaRuntime>();
}

}  // namespace memarena::cuda
