// CPU hints that are not syscalls but still differ per architecture: every CPU intrinsic
// lives here, so the layers above stay free of #if on the target.
#pragma once

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

}  // namespace memarena::platform
