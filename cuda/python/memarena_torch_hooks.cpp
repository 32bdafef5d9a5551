// The optional PyTorch helper's C++ half (compiled at first use by memarena_torch_hooks.py with
// torch.utils.cpp_extension): installs libmemarena_cuda.so as PyTorch's CUDA allocator with the
// C++ hooks the Python CUDAPluggableAllocator class does not expose: empty_cache, record_stream,
// memory fraction and CUDA-graph pools, and turns memarena's out-of-memory exception into
// torch.OutOfMemoryError.
#include <dlfcn.h>
#include <torch/csrc/cuda/CUDAPluggableAllocator.h>
#include <torch/extension.h>

#include <new>
#include <string>

namespace {

using MallocFn = void* (*)(size_t, int, cudaStream_t);
using FreeFn = void (*)(void*, size_t, int, cudaStream_t);
using EmptyCacheFn = void (*)();
using RecordStreamFn = void (*)(void*, cudaStream_t);
using FractionFn = int (*)(double, int);
using PoolFn = void (*)(int, unsigned long long);

void* Symbol(void* library, const std::string& path, const char* name) {
  void* fn = dlsym(library, name);
  TORCH_CHECK(fn != nullptr, "memarena: ", path, " does not export ", name,
              " (rebuild memarena; this helper needs the issue-10 ABI)");
  return fn;
}

// PyTorch names a graph pool by a pair of ids; memarena by one.
unsigned long long PoolKey(const c10::cuda::MempoolId_t& id) {
  return static_cast<unsigned long long>(id.first) * 0x9E3779B97F4A7C15ull ^
         static_cast<unsigned long long>(id.second);
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
  const auto begin_pool =
      reinterpret_cast<PoolFn>(Symbol(library, path, "memarena_cuda_begin_graph_pool"));
  const auto end_pool = reinterpret_cast<PoolFn>(Symbol(library, path, "memarena_cuda_end_graph_pool"));
  const auto release_pool =
      reinterpret_cast<PoolFn>(Symbol(library, path, "memarena_cuda_release_graph_pool"));

  namespace pluggable = torch::cuda::CUDAPluggableAllocator;
  // A generic lambda, so it fits both the int and the c10::DeviceIndex device parameter.
  auto allocator = pluggable::createCustomAllocator(
      [malloc_fn](size_t size, auto device, cudaStream_t stream) -> void* {
        try {
          return malloc_fn(size, static_cast<int>(device), stream);
        } catch (const std::bad_alloc& e) {
          TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
        }
        return nullptr;  // not reached: TORCH_CHECK_WITH throws
      },
      [free_fn](void* ptr, size_t size, int device, cudaStream_t stream) {
        free_fn(ptr, size, device, stream);
      });
  auto* hooks = dynamic_cast<pluggable::CUDAPluggableAllocator*>(allocator.get());
  TORCH_CHECK(hooks != nullptr, "memarena: PyTorch's custom allocator is not a CUDAPluggableAllocator");
  hooks->set_reset_fn([empty_cache] { empty_cache(); });
  hooks->set_record_stream_fn([record_stream](void* ptr, cudaStream_t stream) {
    record_stream(ptr, stream);
  });
  hooks->set_memory_fraction_fn([fraction](double value, int device) {
    TORCH_CHECK(fraction(value, device) == 0, "memarena: memory fraction ", value,
                " is not allowed on device ", device, " (0 < fraction <= 1)");
  });
  // Routing follows the capture state of the allocating stream, so the filter is not needed.
  hooks->set_begin_allocate_to_pool(
      [begin_pool](int device, c10::cuda::MempoolId_t id, std::function<bool(cudaStream_t)>) {
        begin_pool(device, PoolKey(id));
      });
  hooks->set_end_allocate_to_pool_fn([end_pool](int device, c10::cuda::MempoolId_t id) {
    end_pool(device, PoolKey(id));
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
