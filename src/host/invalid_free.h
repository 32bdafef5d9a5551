// Misuse of free: what counts as a double, interior or foreign free, the per-process mark
// a freed small object carries, and the one-line report (MEMARENA_CONF on_invalid_free).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "host/size_classes.h"
#include "memarena/config.h"

namespace memarena::host {

// A freed small object carries, in its second word, its address XOR a per-process random
// key; allocation clears that word. Freeing an object that already carries its mark is a
// double free. A live object whose second word happens to equal the mark would be
// misreported; with a random 64-bit key that takes a 1 in 2^64 coincidence.
inline constinit std::atomic<std::uintptr_t> g_free_key{0};

// Sets the key once per process (before the first thread cache exists).
void InitFreeKey() noexcept;

// `key` is g_free_key; the free fast path passes the copy its thread cache keeps, one load
// from a line it reads anyway instead of a load of a global.
inline std::uintptr_t FreedMark(const void* object, std::uintptr_t key) noexcept {
  return reinterpret_cast<std::uintptr_t>(object) ^ key;
}
inline std::uintptr_t FreedMark(const void* object) noexcept {
  return FreedMark(object, g_free_key.load(std::memory_order_relaxed));
}
inline std::uintptr_t& MarkWord(void* object) noexcept {
  return static_cast<std::uintptr_t*>(object)[1];
}
inline std::uintptr_t MarkWord(const void* object) noexcept {
  return static_cast<const std::uintptr_t*>(object)[1];
}

enum class Misuse : std::uint8_t {
  kDoubleFree,     // a small object already free, or a large block's span already free
  kInteriorFree,   // inside a live block, not at its start
  kForeignFree,    // not in a block of the host heap (stack, static, another allocator)
};

// Writes "memarena: double free of 0x... in free() (size class 4: 64 B objects)" (or
// "invalid free ...") to stderr unless the action is kIgnore, counts it, and aborts when
// the action is kAbort. The action and the count are the process-wide ones every Allocator
// shares (memarena::SetInvalidFreeAction, InvalidFreeCount). `cls` 0: not a small object.
// Allocation-free: runs inside free.
[[gnu::cold]] void ReportInvalidFree(const void* ptr, Misuse misuse, const char* operation,
                                     std::size_t cls) noexcept;

}  // namespace memarena::host
