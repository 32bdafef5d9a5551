// The CUDA backend (libmemarena_cuda.so): BFC arenas on device memory, stream-ordered reuse
// with events only where a block crosses streams, and PyTorch's CUDAPluggableAllocator C ABI
// with the hooks its Python class does not expose. Needs no CUDA header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "memarena/arena.h"
#include "memarena/c_api.h"
#include "memarena/virtual_memory_source.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace memarena::cuda {

// The number of usable devices. Any runtime error (no driver, driver too old, no device)
// counts as none: returns 0 and, when `reason` is given, stores the runtime's message.
int DeviceCount(std::string* reason = nullptr) noexcept;

// cudaMalloc / cudaFree on `device` (regions 256 B aligned, never merged), with
// cudaMemGetInfo as Capacity(). Throws std::runtime_error naming the reason when `device`
// is not usable.
std::shared_ptr<MemorySource> MakeDeviceMemorySource(int device);

// The virtual-memory source of the expandable arena on `device`: a cuMemAddressReserve range
// of `reserve_bytes` (0: four times the device's memory) whose granules (the device's
// minimum allocation granularity) are cuMemCreate'd, mapped and made accessible on demand and
// unmapped and released on decommit. Throws std::runtime_error when the device is not usable
// or has no virtual-memory support.
std::shared_ptr<VirtualMemorySource> MakeDeviceVirtualMemorySource(int device,
                                                                  std::size_t reserve_bytes = 0);

// A StreamFence backed by CUDA events on `device`. Record makes no CUDA call (the per-thread
// stream excepted); HasCompleted records one event on the freeing stream when another stream
// first asks (from a pool of at most 1024 recycled events) and polls it without blocking.
// Throws like MakeDeviceMemorySource.
std::shared_ptr<StreamFence> MakeEventFence(int device);

// A BfcArena on `device` with `config`, stream-aware through MakeEventFence; with
// config.expandable_segments over MakeDeviceVirtualMemorySource(device), else over cudaMalloc.
// Throws std::runtime_error when the device is not usable, ConfigError for a bad config.
std::shared_ptr<BfcArena> MakeDeviceArena(int device, ArenaConfig config = {});

// The arena's handle for a CUDA stream, never 0. The default stream (nullptr) is the legacy
// stream, a stream too; cudaStreamPerThread maps to the calling thread's own stream, so two
// threads on their per-thread streams never share a handle. Costs a lock and, for the
// per-thread stream, one runtime call.
StreamHandle ToStreamHandle(CUstream_st* stream) noexcept;

// What the backend did with CUDA events since the process started, over all devices: how
// many it created and destroyed (pooled, so created stays small), recorded and queried. A
// free reused on its own stream touches none of them. Four relaxed atomic loads.
struct EventCounters {
  std::uint64_t created = 0;
  std::uint64_t destroyed = 0;
  std::uint64_t recorded = 0;
  std::uint64_t queried = 0;
};
EventCounters GetEventCounters() noexcept;

}  // namespace memarena::cuda

extern "C" {
// PyTorch's CUDAPluggableAllocator ABI. One arena per device, created on first use with
// ArenaConfig::FromEnvironment("MEMARENA_CUDA_CONF"), over cudaMalloc regions or, with
// expandable_segments:1, over the device's virtual-memory source (one growing range, as
// PyTorch's expandable_segments:True); after that, malloc and free take only the arena's lock.
//
// memarena_cuda_malloc returns the block, or nullptr for size 0. It never returns nullptr for
// a failed request: it throws memarena::OutOfMemory (a std::bad_alloc) whose what() is the
// diagnostic (requested, in use, held, limit, the device error when it was not plain out of
// memory, which knob to turn), or std::runtime_error when the device is not usable. PyTorch
// calls it from C++ and turns the exception into a Python exception carrying what().
void* memarena_cuda_malloc(std::size_t size, int device, CUstream_st* stream);
// Frees `ptr` after the work queued on `stream` (PyTorch passes the allocation stream); a
// block given to memarena_cuda_record_stream waits also for those streams. Throws only
// std::runtime_error when `device` is not usable.
void memarena_cuda_free(void* ptr, std::size_t size, int device, CUstream_st* stream);
// Gives the free regions of `device`'s arena and graph pools back to the driver; returns the
// bytes given back (0 when the device was never used). Never waits for a stream.
std::size_t memarena_cuda_release_unused(int device);
// torch.cuda.empty_cache(): memarena_cuda_release_unused on every device in use.
void memarena_cuda_empty_cache(void);
// Tensor.record_stream(stream): the block is also used by the work queued on `stream`; when it
// is freed, it is not reused until that work completed (one pooled event per such stream).
void memarena_cuda_record_stream(void* ptr, CUstream_st* stream);
// Fills *out with `device`'s stats (arena plus graph pools; zeros when never used). Returns 0,
// or EINVAL for a null `out`.
int memarena_cuda_get_stats(int device, memarena_stats* out);
// torch.cuda.reset_peak_memory_stats: the peaks of `device`'s arena restart from now (the
// pytest guard's per-test device probe uses it). No-op for a device never used.
void memarena_cuda_reset_peak_stats(int device);
// torch.cuda.set_per_process_memory_fraction: caps what `device`'s arena holds at `fraction`
// (0 < fraction <= 1) of the device's total memory. Returns 0, EINVAL for a bad fraction,
// ENODEV when the device's capacity is unknown, ENOTSUP for an expandable arena (use
// MEMARENA_CUDA_CONF's max_mem, which caps its committed bytes).
int memarena_cuda_set_memory_fraction(double fraction, int device);
// CUDA graphs and memory pools (PyTorch's beginAllocateToPool / endAllocateToPool /
// releasePool). Between begin and end, allocations on the streams the pool takes come from
// the private pool `pool_id`, and no event is recorded or queried on `device`. When several
// are underway at once (two captures on two streams, as PyTorch allows), an allocation goes to
// the newest one that takes its stream, as in PyTorch's own allocator; blocks freed later go
// back to the pool they came from. Each begin counts one user of the pool (graphs may share a
// pool); release drops one, and the pool's memory goes back to the device once no user is
// left and none of it is in use. end without a matching begin is a no-op.
//
// memarena_cuda_begin_graph_pool: the pool takes every stream that is being captured
// (cudaStreamIsCapturing), which is right while only one capture is underway.
void memarena_cuda_begin_graph_pool(int device, unsigned long long pool_id);
// PyTorch's filter: returns nonzero when `stream` allocates to the pool (for a CUDA graph, the
// stream is capturing into that graph). Called from memarena_cuda_malloc under a lock of
// memarena's: it must not call back into memarena.
typedef int (*memarena_cuda_stream_filter)(void* context, CUstream_st* stream);
// The pool takes the streams `filter` accepts (a null filter: as
// memarena_cuda_begin_graph_pool). `context` is passed to `filter` and must stay valid until
// memarena_cuda_end_graph_pool(device, pool_id) returns.
void memarena_cuda_begin_graph_pool_filtered(int device, unsigned long long pool_id,
                                             memarena_cuda_stream_filter filter, void* context);
void memarena_cuda_end_graph_pool(int device, unsigned long long pool_id);
void memarena_cuda_release_graph_pool(int device, unsigned long long pool_id);
}
