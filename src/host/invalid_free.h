// Misuse of free: what counts as a double, interior or foreign free, the per-process mark
// a freed small object carries, and the one-line report (MEMARENA_CONF on_invalid_free).
#pragma once

#include <array>
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

inline std::uintptr_t FreedMark(const void* object) noexcept {
  return reinterpret_cast<std::uintptr_t>(object) ^ g_free_key.load(std::memory_order_relaxed);
}
inline std::uintptr_t& MarkWord(void* object) noexcept {
  return static_cast<std::uintptr_t*>(object)[1];
}
inline std::uintptr_t MarkWord(const void* object) noexcept {
  return static_cast<const std::uintptr_t*>(object)[1];
}

namespace detail {
// Per class, Lemire's divisibility test folded with the bound on the object index: with
// c = ceil(2^64 / size) and e = size * c mod 2^64 (< size), an offset n = q * size maps to
// n * c mod 2^64 = q * e, while an offset that is not a multiple of size maps to at least c
// (> 2^46 here). So "n * c mod 2^64 < objects * e" accepts exactly the starts of the span's
// objects: one multiply and one compare on the free path, no division. A power-of-two size
// has e = 0; its spans have no tail (asserted below), so "< c" (divisible) is enough.
struct ObjectGeometry {
  std::uint64_t inverse = 0;  // c
  std::uint64_t limit = 0;    // objects * e, or c when e = 0
};
inline constexpr auto kGeometry = [] {
  std::array<ObjectGeometry, kNumClasses + 1> table{};
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const std::uint64_t size = kClasses[cls].size;
    const std::uint64_t c = UINT64_MAX / size + 1;
    const std::uint64_t e = size * c;  // mod 2^64
    table[cls].inverse = c;
    table[cls].limit = e != 0 ? kClasses[cls].objects * e : c;
  }
  return table;
}();
constexpr bool PowerOfTwoClassesHaveNoTail() {
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const std::uint64_t size = kClasses[cls].size;
    const bool power_of_two = (size & (size - 1)) == 0;
    if (power_of_two && std::uint64_t{kClasses[cls].objects} * size !=
                            std::uint64_t{kClasses[cls].pages} * kPageSize) {
      return false;
    }
  }
  return true;
}
static_assert(PowerOfTwoClassesHaveNoTail(), "IsObjectStart needs tail-free power-of-two spans");
}  // namespace detail

// The offset of `ptr` from the start of its small span, from the page index in its
// pagemap entry (see Pagemap::EntryOf).
inline std::uint64_t OffsetInSpan(const void* ptr, unsigned entry) noexcept {
  return (std::uint64_t{entry >> 8} << kPageShift) |
         (reinterpret_cast<std::uintptr_t>(ptr) & (kPageSize - 1));
}

// True when `ptr` is the start of an object of class `cls`.
inline bool IsObjectStart(const void* ptr, unsigned entry, std::size_t cls) noexcept {
  const detail::ObjectGeometry& g = detail::kGeometry[cls];
  return OffsetInSpan(ptr, entry) * g.inverse < g.limit;
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
