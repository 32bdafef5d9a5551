// The GPU stream gate: a spin kernel on a host-mapped flag, and the capture calls the
// device-logic tests need on a real GPU.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "gpu_stream_gate.h"

namespace memarena::cuda::gpu_gate {
namespace {

__global__ void SpinUntilSet(const volatile int* flag) {
  while (*flag == 0) __nanosleep(1000);
}

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status));
  }
}

cudaStream_t Stream(std::uintptr_t stream) { return reinterpret_cast<cudaStream_t>(stream); }

}  // namespace

struct Gate {
  volatile int* flag = nullptr;
  cudaEvent_t done = nullptr;  // recorded behind the kernel
};

bool DeviceUsable(std::string* reason) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess && count > 0) return true;
  *reason = status != cudaSuccess ? std::string("no usable CUDA device: ") +
                                        cudaGetErrorName(status) + ": " + cudaGetErrorString(status)
                                  : std::string("no CUDA device");
  cudaGetLastError();
  return false;
}

std::size_t TotalBytes() {
  std::size_t free_bytes = 0, total = 0;
  Check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  return total;
}

std::size_t UsedBytes() {
  std::size_t free_bytes = 0, total = 0;
  Check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  return total - free_bytes;
}

Gate* Close(std::uintptr_t stream) {
  auto* gate = new Gate;
  int* flag = nullptr;
  Check(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
  *flag = 0;
  gate->flag = flag;
  int* device_flag = nullptr;
  Check(cudaHostGetDevicePointer(&device_flag, flag, 0), "cudaHostGetDevicePointer");
  SpinUntilSet<<<1, 1, 0, Stream(stream)>>>(device_flag);
  Check(cudaGetLastError(), "launching the spin kernel");
  Check(cudaEventCreateWithFlags(&gate->done, cudaEventDisableTiming), "cudaEventCreate");
  Check(cudaEventRecord(gate->done, Stream(stream)), "cudaEventRecord");
  return gate;
}

void Open(Gate* gate) {
  *gate->flag = 1;
  const cudaError_t status = cudaEventSynchronize(gate->done);
  cudaEventDestroy(gate->done);
  cudaFreeHost(const_cast<int*>(gate->flag));
  delete gate;
  Check(status, "cudaEventSynchronize");
}

std::uint64_t BeginCapture(std::uintptr_t stream) {
  Check(cudaStreamBeginCapture(Stream(stream), cudaStreamCaptureModeGlobal),
        "cudaStreamBeginCapture");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  Check(cudaStreamGetCaptureInfo(Stream(stream), &status, &id), "cudaStreamGetCaptureInfo");
  return id;
}

bool EndCapture(std::uintptr_t stream) {
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(Stream(stream), &graph);
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (status != cudaSuccess) cudaGetLastError();
  return status == cudaSuccess;
}

}  // namespace memarena::cuda::gpu_gate
