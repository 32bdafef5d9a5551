// Misuse of free: what counts as a double, interior or foreign free, the per-process mark
// a freed small object carries, and the one-line report (MEMARENA_CONF on_invalid_free).
#pragma once

#include <cstddef>
#include <cstdint>

#include "host/size_classes.h"
#include "memarena/config.h"

namespace memarena::host {

// A freed small object carries a mark in its second word; allocation clears that word.
// Freeing an object that already carries its mark is a double free. The mark is an address
// one byte inside the pagemap leaf that covers the object (Pagemap::Find,
// kFreedMarkOffset): the free path has the leaf in a register after its pagemap lookup, so
// checking and writing the mark costs no load and one add (a per-process key XOR the
// address cost two of the pair's ~60 uops). It lies inside heap metadata no program is
// handed a pointer to, so a live object's second word equals it only when the program
// copied a freed object's second word there (a use after free); that free would be
// misreported as double. (The leaf's own address was the mark until the thirty-first
// session: it is also the end of the mapping below the leaf, which a program may hold.)
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
