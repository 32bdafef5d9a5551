// The heap sampler's state: the mean sampling interval, each thread's geometric draw, and
// the table of sampled blocks that are still live, with their call stacks.
//
// The malloc fast path only subtracts the request from ThreadCache::sample_left; when it
// would go negative the allocation takes the slow path, which asks Record() to keep it.
// Sampled blocks get a span of their own whose record names their table entry
// (Span::sample_entry), so Free finds them on its large path, removes them without a
// lookup, and the small free fast path stays as it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memarena::host::sampler {

inline constexpr int kMaxFrames = 32;

// A live sample, as Snapshot copies it out.
struct Sample {
  void* ptr = nullptr;
  std::size_t bytes = 0;  // what the caller asked for
  std::uint32_t depth = 0;
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

// -ln(u) for a normal double u in (0, 1], within 1e-10 (relative, above 1) of -std::log(u)
// and without a libm call: the draw's one transcendental. Exposed for the tests.
double NegativeLog(double u) noexcept;

// True while the calling thread is inside the sampler (its own allocations are not
// sampled, and a sample cannot be taken recursively).
bool Busy() noexcept;

// Table entries are named by index + 1 (0: none). `spare` is the calling thread's kept
// free entry (0: none; nullptr: a thread without one): Record takes it before the shared
// free list and Remove refills it before giving an entry back, so a thread that samples and
// frees takes no lock; the shared list is behind the sampler's lock. Writing and clearing
// an entry takes no lock (each entry has one writer at a time: the thread that owns its
// block; Snapshot reads it under a sequence count).

// Keeps `ptr` (a block of `bytes`) with the caller's stack. Returns its entry, or 0 when
// the table is full or the thread is already inside the sampler. Never takes a heap lock.
std::uint32_t Record(void* ptr, std::size_t bytes, std::uint32_t* spare) noexcept;

// Forgets the sampled block of `entry` (its free, from any thread).
void Remove(std::uint32_t entry, std::uint32_t* spare) noexcept;

// Gives a thread's kept entry back to the shared list (thread exit).
void ReleaseSpare(std::uint32_t* spare) noexcept;

// The sampler's lock, for the heap's fork handlers (a child must not inherit it held).
void LockForFork() noexcept;
void UnlockAfterFork() noexcept;

// The live samples, copied out (allocates; takes no lock, so frees may run meanwhile).
std::vector<Sample> Snapshot();

// The estimated true bytes and objects one sample of `bytes` stands for: with a mean
// interval R the block was sampled with probability 1 - exp(-bytes / R).
double EstimatedBytes(std::size_t bytes, std::size_t mean_interval) noexcept;
double EstimatedObjects(std::size_t bytes, std::size_t mean_interval) noexcept;

}  // namespace memarena::host::sampler
