// The CUDA backend (libmemarena_cuda.so): BFC arenas on device memory, stream-ordered reuse
// through CUDA events, and PyTorch's CUDAPluggableAllocator C ABI. Needs no CUDA header.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "memarena/arena.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace memarena::cuda {

// The number of usable devices. Any runtime error (no driver, driver too old, no device)
// counts as none: returns 0 and, when `reason` is given, stores the runtime's message.
int DeviceCount(std::string* reason = nullptr) noexcept;

// cudaMalloc / cudaFree on `device` (regions 256 B aligned, never merged), with
// cudaMemGetInfo as Capacity(). Throws std::runtime_error naming the reason when `device`
// is not usable.
std::shared_ptr<MemorySource> MakeDeviceMemorySource(int device);

// A StreamFence backed by CUDA events on `device`: Record is cudaEventRecord (pooled
// events), HasCompleted is cudaEventQuery. Throws like MakeDeviceMemorySource.
std::shared_ptr<StreamFence> MakeEventFence(int device);

// A BfcArena on `device` with `config`, stream-aware through MakeEventFence. Throws
// std::runtime_error when the device is not usable, ConfigError for a bad config.
std::shared_ptr<BfcArena> MakeDeviceArena(int device, ArenaConfig config = {});

// The arena's handle for a CUDA stream. The legacy default stream (nullptr) is a stream
// too, so memory freed on it is only reused elsewhere after its event completed.
StreamHandle ToStreamHandle(CUstream_st* stream) noexcept;

}  // namespace memarena::cuda

extern "C" {
// PyTorch's CUDAPluggableAllocator ABI. One arena per device, created on first use with
// ArenaConfig::FromEnvironment("MEMARENA_CUDA_CONF"). Returns nullptr when the request
// cannot be served (PyTorch then raises its out-of-memory error).
void* memarena_cuda_malloc(std::size_t size, int device, CUstream_st* stream);
// Frees `ptr` after the work queued on `stream` (PyTorch passes the allocation stream).
void memarena_cuda_free(void* ptr, std::size_t size, int device, CUstream_st* stream);
// Gives the free regions of `device`'s pluggable arena back to the driver (as
// torch.cuda.empty_cache() would); returns the bytes given back.
std::size_t memarena_cuda_release_unused(int device);
}
