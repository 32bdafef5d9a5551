// The heap sampler's state: the mean sampling interval, each thread's geometric draw, and
// the table of sampled blocks that are still live, with their call stacks.
//
// The malloc fast path only subtracts the request from ThreadCache::sample_left; when it
// would go negative the allocation takes the slow path, which asks Record() to keep it.
// Sampled blocks get a span of their own (Span::sampled), so Free finds them on its large
// path and the small free fast path stays as it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memarena::host::sampler {

inline constexpr int kMaxFrames = 32;

struct Sample {
  void* ptr = nullptr;
  std::size_t bytes = 0;  // what the caller asked for
  std::uint32_t depth = 0;
  std::uint32_t next = 0;  // table chain (index + 1; 0 ends it)
  void* frames[kMaxFrames] = {};
};

// Mean bytes between samples; 0 turns sampling off. Bumps Epoch() so every thread draws a
// new interval at its next slow path.
void SetMeanInterval(std::size_t bytes) noexcept;
std::size_t MeanInterval() noexcept;
std::uint64_t Epoch() noexcept;

// While sampling is off a thread still takes the slow path once per kOffInterval bytes
// served by the fast path, so a thread that never refills its cache (a hot alloc/free pair)
// notices within that many bytes that sampling was turned on.
inline constexpr std::int64_t kOffInterval = std::int64_t{64} << 20;

// Bytes the calling thread allocates before its next sample: an exponential draw around
// the mean (the byte-level geometric interval), or kOffInterval when sampling is off.
std::int64_t NextInterval() noexcept;

// True while the calling thread is inside the sampler (its own allocations are not
// sampled, and a sample cannot be taken recursively).
bool Busy() noexcept;

// Keeps `ptr` (a block of `bytes`) with the caller's stack. False when the table is full
// or the thread is already inside the sampler. Takes the sampler's lock, never a heap lock.
bool Record(void* ptr, std::size_t bytes) noexcept;

// Forgets a sampled block (its free).
void Remove(void* ptr) noexcept;

// The live samples, copied out (allocates, outside the sampler's lock).
std::vector<Sample> Snapshot();

// The estimated true bytes and objects one sample of `bytes` stands for: with a mean
// interval R the block was sampled with probability 1 - exp(-bytes / R).
double EstimatedBytes(std::size_t bytes, std::size_t mean_interval) noexcept;
double EstimatedObjects(std::size_t bytes, std::size_t mean_interval) noexcept;

}  // namespace memarena::host::sampler
