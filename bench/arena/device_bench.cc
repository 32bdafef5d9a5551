// Device allocation cost: BfcArena on cudaMalloc (direct and through the PyTorch pluggable
// ABI) against cudaMalloc/cudaFree and cudaMallocAsync/cudaFreeAsync, plus a mixed trace
// that also reports reserved / peak in use. Needs a GPU; prints the reason and exits 0
// without one. Run through bench/arena/device_bench.sh.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "memarena/cuda.h"
#include "platform/os.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRepetitions = 5;

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
  }
}

// Median over kRepetitions of the mean ns per call of `body`, called `n` times in a row.
double MedianNs(int n, const std::function<void()>& body, const std::function<void()>& drain) {
  std::vector<double> samples;
  for (int r = 0; r < kRepetitions; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < n; ++i) body();
    drain();
    const auto ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    samples.push_back(ns / n);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

struct Allocators {
  std::shared_ptr<memarena::BfcArena> arena;
  cudaStream_t stream = nullptr;
  memarena::StreamHandle handle = 0;
};

void PairTable(Allocators& a) {
  fmt::print("{:<34} {:>12} {:>12} {:>12}\n", "alloc+free pair, ns (median of 5)", "256 B",
             "64 KiB", "4 MiB");
  const std::size_t sizes[] = {256, 64 << 10, 4 << 20};
  auto row = [&](const char* name, int n, auto&& pair, const std::function<void()>& drain) {
    std::string line = fmt::format("{:<34}", name);
    for (std::size_t size : sizes) line += fmt::format(" {:>12.0f}", MedianNs(n, [&] { pair(size); }, drain));
    fmt::print("{}\n", line);
  };
  auto sync = [&] { Check(cudaStreamSynchronize(a.stream), "cudaStreamSynchronize"); };
  row("cudaMalloc + cudaFree", 500, [&](std::size_t size) {
    void* p = nullptr;
    Check(cudaMalloc(&p, size), "cudaMalloc");
    Check(cudaFree(p), "cudaFree");
  }, sync);
  row("cudaMallocAsync + cudaFreeAsync", 20000, [&](std::size_t size) {
    void* p = nullptr;
    Check(cudaMallocAsync(&p, size, a.stream), "cudaMallocAsync");
    Check(cudaFreeAsync(p, a.stream), "cudaFreeAsync");
  }, sync);
  row("memarena BfcArena (stream-aware)", 20000, [&](std::size_t size) {
    void* p = a.arena->TryAllocateOnStream(size, 256, a.handle);
    a.arena->DeallocateOnStream(p, a.handle);
  }, sync);
  row("memarena pluggable ABI", 20000, [&](std::size_t size) {
    void* p = memarena_cuda_malloc(size, 0, a.stream);
    memarena_cuda_free(p, size, 0, a.stream);
  }, sync);
}

// 1,000 live blocks, log-uniform 256 B .. 8 MiB, random replacement.
void MixedTrace(Allocators& a) {
  constexpr int kLive = 1000;
  constexpr int kOps = 20000;
  std::mt19937_64 rng(7);
  std::vector<std::pair<std::size_t, std::size_t>> ops;  // (slot, size)
  for (int i = 0; i < kOps; ++i) {
    const unsigned shift = 8 + static_cast<unsigned>(rng() % 16);
    ops.emplace_back(rng() % kLive, 1 + rng() % (std::size_t{1} << shift));
  }
  cudaMemPool_t pool = nullptr;
  Check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
  std::vector<void*> live(kLive, nullptr);
  auto run = [&](auto&& alloc, auto&& free) {
    for (void*& p : live) p = alloc(ops[0].second);
    const auto start = Clock::now();
    for (const auto& [slot, size] : ops) {
      free(live[slot]);
      live[slot] = alloc(size);
    }
    Check(cudaStreamSynchronize(a.stream), "cudaStreamSynchronize");
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kOps;
    for (void*& p : live) free(p);
    Check(cudaStreamSynchronize(a.stream), "cudaStreamSynchronize");
    return ns;
  };
  const double async_ns = run(
      [&](std::size_t size) {
        void* p = nullptr;
        Check(cudaMallocAsync(&p, size, a.stream), "cudaMallocAsync");
        return p;
      },
      [&](void* p) { Check(cudaFreeAsync(p, a.stream), "cudaFreeAsync"); });
  std::uint64_t reserved_high = 0;
  std::uint64_t used_high = 0;
  Check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &reserved_high), "attr");
  Check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &used_high), "attr");
  a.arena->ResetPeakStats();
  const double arena_ns = run(
      [&](std::size_t size) { return a.arena->TryAllocateOnStream(size, 256, a.handle); },
      [&](void* p) { a.arena->DeallocateOnStream(p, a.handle); });
  const memarena::AllocatorStats s = a.arena->GetStats();
  fmt::print("\nmixed trace, {} live, 256 B..8 MiB    {:>12} {:>22}\n", kLive, "ns per op",
             "reserved / peak used");
  fmt::print("{:<34} {:>12.0f} {:>22.3f}\n", "cudaMallocAsync (default pool)", async_ns,
             static_cast<double>(reserved_high) / static_cast<double>(used_high));
  fmt::print("{:<34} {:>12.0f} {:>22.3f}\n", "memarena BfcArena", arena_ns,
             static_cast<double>(s.peak_bytes_held) / static_cast<double>(s.peak_bytes_in_use));
}

// Host memory over 1,000,000 same-stream pairs through the pluggable ABI: flat when a free
// records no event (issue 10 measured +100 MB with one event per free).
void SameStreamHostMemory(Allocators& a) {
  constexpr int kPairs = 1000000;
  auto pairs = [&](int n) {
    for (int i = 0; i < n; ++i) {
      void* p = memarena_cuda_malloc(256, 0, a.stream);
      memarena_cuda_free(p, 256, 0, a.stream);
    }
    Check(cudaStreamSynchronize(a.stream), "cudaStreamSynchronize");
  };
  pairs(1000);
  const double before = static_cast<double>(memarena::platform::ResidentBytes());
  pairs(kPairs);
  const double after = static_cast<double>(memarena::platform::ResidentBytes());
  fmt::print("\nhost RSS change over {} same-stream pluggable pairs: {:+.2f} MiB\n", kPairs,
             (after - before) / (1 << 20));
}

}  // namespace

int main() {
  std::string reason;
  if (memarena::cuda::DeviceCount(&reason) == 0) {
    fmt::print("arena_device_bench: no usable CUDA device ({}); nothing measured\n", reason);
    return 0;
  }
  try {
    Allocators a;
    Check(cudaSetDevice(0), "cudaSetDevice");
    Check(cudaStreamCreateWithFlags(&a.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cudaMemPool_t pool = nullptr;
    Check(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
    std::uint64_t keep = UINT64_MAX;  // keep freed memory in the pool, as an arena does
    Check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "attr");
    a.arena = memarena::cuda::MakeDeviceArena(0);
    a.handle = memarena::cuda::ToStreamHandle(a.stream);
    cudaDeviceProp prop{};
    Check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    fmt::print("device 0: {}\n\n", prop.name);
    PairTable(a);
    MixedTrace(a);
    SameStreamHostMemory(a);
    Check(cudaStreamDestroy(a.stream), "cudaStreamDestroy");
  } catch (const std::exception& e) {
    fmt::print(stderr, "arena_device_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
