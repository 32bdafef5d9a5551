// CPU hints that are not syscalls but still differ per architecture: every CPU intrinsic
// lives here, so the layers above stay free of #if on the target.
#pragma once

#include <atomic>
#include <type_traits>

#if defined(__SANITIZE_THREAD__)
#define MEMARENA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MEMARENA_TSAN 1
#endif
#endif

namespace memarena::platform {

// Tells the CPU the caller is spinning on a lock (x86 `pause`: saves power and lets the
// sibling hyperthread run); a no-op elsewhere.
inline void CpuRelax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Asks the CPU to bring the line at `address` into every cache level ahead of a load
// (x86 `prefetcht0`); never faults, so nullptr or a stale address is harmless.
inline void Prefetch(const void* address) noexcept { __builtin_prefetch(address, 0, 3); }

// Adds `by` to a counter that only the calling thread writes and other threads read with
// relaxed loads. g++ never folds an atomic's load, add and store into one instruction; on
// x86-64 this is one add to memory, not a locked one (2 fused uops against 3): the hardware
// writes an aligned word whole, so a reader sees the value before or after, and no other
// writer exists to lose. The allocation fast path updates two such counters (issue 12: 6 of
// its 28 instructions, 2 with this). Elsewhere, and under TSAN (which must see the store),
// the relaxed load and store.
template <typename T>
inline void AddOwnedCounter(std::atomic<T>& counter, T by) noexcept {
  static_assert(std::is_integral_v<T> && std::atomic<T>::is_always_lock_free &&
                sizeof(std::atomic<T>) == sizeof(T));
#if defined(__x86_64__) && !defined(MEMARENA_TSAN)
  T& word = *reinterpret_cast<T*>(&counter);
  if constexpr (sizeof(T) == 8) {
    asm("addq %1, %0" : "+m"(word) : "er"(by) : "cc");
  } else {
    static_assert(sizeof(T) == 4);
    asm("addl %1, %0" : "+m"(word) : "ir"(by) : "cc");
  }
#else
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
#endif
}

// Whether a flag that is nearly always false is set, for a branch on it: a relaxed load.
// g++ loads an atomic into a register, then tests it (movzbl, test, jne); on x86-64 this is
// one compare of the byte in memory with zero (cmpb, jne). The drop-in's malloc, free, new
// and delete each test the trace flag (issue 12: 6 of a new+delete pair's 71 instructions,
// 4 with this).
inline bool FlagSet(const std::atomic<bool>& flag) noexcept {
  static_assert(sizeof(std::atomic<bool>) == 1);
#if defined(__x86_64__) && !defined(MEMARENA_TSAN) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool set;
  asm volatile("cmpb $0, %1" : "=@ccne"(set) : "m"(*reinterpret_cast<const unsigned char*>(&flag)));
  return set;
#else
  return flag.load(std::memory_order_relaxed);
#endif
}

}  // namespace memarena::platform
