// The optional PyTorch helper's C++ half (compiled at first use by memarena_torch_hooks.py with
// torch.utils.cpp_extension): installs libmemarena_cuda.so as PyTorch's CUDA allocator with the
// C++ hooks of torch::cuda::CUDAPluggableAllocator (empty_cache, record_stream, memory fraction,
// graph pools with their stream filter) and turns memarena's out-of-memory exception into
// c10::OutOfMemoryError, which Python sees as torch.OutOfMemoryError.
//
// Written against pytorch/pytorch torch/csrc/cuda/CUDAPluggableAllocator.{h,cpp} (header at
// 011c9ee15779e3705aa23f4c6aa828486931472e, source at 5815a9e45ab50d6e11c66f3ace49287aa6617a15)
// and torch/csrc/cuda/Module.cpp; see docs/arena.md for what has been checked and how.
#include <dlfcn.h>
#include <torch/csrc/cuda/CUDAPluggableAllocator.h>
#include <torch/extension.h>

#include <cerrno>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>

namespace {

// The exports of libmemarena_cuda.so (include/memarena/cuda.h).
using MallocFn = void* (*)(size_t, int, cudaStream_t);
using FreeFn = void (*)(void*, size_t, int, cudaStream_t);
using EmptyCacheFn = void (*)();
using RecordStreamFn = void (*)(void*, cudaStream_t);
using FractionFn = int (*)(double, int);
using StreamFilterFn = int (*)(void*, cudaStream_t);
using BeginPoolFn = void (*)(int, unsigned long long, StreamFilterFn, void*);
using PoolFn = void (*)(int, unsigned long long);

// PyTorch's stream filter (std::function<bool(cudaStream_t)>) as memarena's C filter.
using TorchFilter = std::function<bool(cudaStream_t)>;
int CallTorchFilter(void* filter, cudaStream_t stream) {
  return (*static_cast<TorchFilter*>(filter))(stream) ? 1 : 0;
}

void* Symbol(void* library, const std::string& path, const char* name) {
  void* fn = dlsym(library, name);
  TORCH_CHECK(fn != nullptr, "memarena: ", path, " does not export ", name,
              " (rebuild memarena; this helper needs the issue-10 ABI)");
  return fn;
}

// PyTorch names a pool by a pair of ids: {id, 0} for a graph's own pool, {0, id} for a
// user-created MemPool (c10/cuda/CUDACachingAllocator.cpp). memarena takes one integer: the
// two forms map to even and odd keys, so no two pools PyTorch makes share a key.
unsigned long long PoolKey(const c10::cuda::MempoolId_t& id) {
  if (id.second == 0) return id.first << 1;
  if (id.first == 0) return (id.second << 1) | 1;
  return (id.first * 0x9E3779B97F4A7C15ull ^ id.second) | 1;  // never made by PyTorch
}

// The filters of the pools being allocated to, kept alive from begin to end.
struct Filters {
  std::mutex mutex;
  std::map<std::pair<int, unsigned long long>, std::unique_ptr<TorchFilter>> by_pool;
};

const char* FractionError(int code) {
  switch (code) {
    case EINVAL: return "is not allowed (0 < fraction <= 1)";
    case ENODEV: return "cannot be applied: the device's total memory is unknown";
    case ENOTSUP:
      return "cannot be applied to an expandable arena (MEMARENA_CUDA_CONF expandable_segments:1); "
             "cap it with MEMARENA_CUDA_CONF max_mem instead";
    default: return "failed";
  }
}

void Install(const std::string& path) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  TORCH_CHECK(library != nullptr, "memarena: cannot load ", path, ": ", dlerror());
  const auto malloc_fn = reinterpret_cast<MallocFn>(Symbol(library, path, "memarena_cuda_malloc"));
  const auto free_fn = reinterpret_cast<FreeFn>(Symbol(library, path, "memarena_cuda_free"));
  const auto empty_cache =
      reinterpret_cast<EmptyCacheFn>(Symbol(library, path, "memarena_cuda_empty_cache"));
  const auto record_stream =
      reinterpret_cast<RecordStreamFn>(Symbol(library, path, "memarena_cuda_record_stream"));
  const auto fraction =
      reinterpret_cast<FractionFn>(Symbol(library, path, "memarena_cuda_set_memory_fraction"));
  const auto begin_pool = reinterpret_cast<BeginPoolFn>(
      Symbol(library, path, "memarena_cuda_begin_graph_pool_filtered"));
  const auto end_pool = reinterpret_cast<PoolFn>(Symbol(library, path, "memarena_cuda_end_graph_pool"));
  const auto release_pool =
      reinterpret_cast<PoolFn>(Symbol(library, path, "memarena_cuda_release_graph_pool"));

  namespace pluggable = torch::cuda::CUDAPluggableAllocator;
  // PyTorch's CUDAPluggableAllocator::malloc stores whatever alloc_fn returns, nullptr
  // included, and never checks it; memarena_cuda_malloc throws instead (std::bad_alloc for out
  // of memory), and the exception becomes c10::OutOfMemoryError here so that Python sees
  // torch.OutOfMemoryError with memarena's diagnostic.
  auto allocator = pluggable::createCustomAllocator(
      [malloc_fn](size_t size, int device, cudaStream_t stream) -> void* {
        try {
          return malloc_fn(size, device, stream);
        } catch (const std::bad_alloc& e) {
          TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
        }
        return nullptr;  // not reached: TORCH_CHECK_WITH throws
      },
      [free_fn](void* ptr, size_t size, int device, cudaStream_t stream) {
        free_fn(ptr, size, device, stream);
      });
  auto hooks = std::dynamic_pointer_cast<pluggable::CUDAPluggableAllocator>(allocator);
  TORCH_CHECK(hooks != nullptr, "memarena: PyTorch's custom allocator is not a CUDAPluggableAllocator");
  hooks->set_reset_fn([empty_cache] { empty_cache(); });
  hooks->set_record_stream_fn([record_stream](void* ptr, cudaStream_t stream) {
    record_stream(ptr, stream);
  });
  hooks->set_memory_fraction_fn([fraction](double value, int device) {
    const int code = fraction(value, device);
    TORCH_CHECK(code == 0, "memarena: memory fraction ", value, " on device ", device, " ",
                FractionError(code));
  });
  // Two captures may be underway at once (two threads, two streams): each pool keeps its
  // filter, so each stream's blocks go to its own graph's pool.
  auto filters = std::make_shared<Filters>();
  hooks->set_begin_allocate_to_pool(
      [begin_pool, filters](int device, c10::cuda::MempoolId_t id, TorchFilter filter) {
        const unsigned long long key = PoolKey(id);
        auto owned = std::make_unique<TorchFilter>(std::move(filter));
        TorchFilter* raw = owned.get();
        {
          std::lock_guard<std::mutex> lock(filters->mutex);
          filters->by_pool[{device, key}] = std::move(owned);
        }
        begin_pool(device, key, &CallTorchFilter, raw);
      });
  hooks->set_end_allocate_to_pool_fn([end_pool, filters](int device, c10::cuda::MempoolId_t id) {
    const unsigned long long key = PoolKey(id);
    end_pool(device, key);  // after this memarena no longer calls the filter
    std::lock_guard<std::mutex> lock(filters->mutex);
    filters->by_pool.erase({device, key});
  });
  hooks->set_release_pool([release_pool](int device, c10::cuda::MempoolId_t id) {
    release_pool(device, PoolKey(id));
  });
  pluggable::changeCurrentAllocator(allocator);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("install", &Install, "Install libmemarena_cuda.so (path) with PyTorch's C++ hooks");
}
