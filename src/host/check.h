// Checked mode of the host heap (after mimalloc's debug levels): MEMARENA_CHECKED, on in
// Debug builds, verifies span and pagemap invariants after every page-heap operation.
#pragma once

#include <cstdlib>
#include <cstring>

#include "platform/os.h"

#if !defined(MEMARENA_CHECKED) && !defined(NDEBUG)
#define MEMARENA_CHECKED 1
#endif

namespace memarena::host {

inline constexpr bool kChecked =
#if defined(MEMARENA_CHECKED) && MEMARENA_CHECKED
    true;
#else
    false;
#endif

// Reports a broken heap invariant and aborts. Allocation-free: it may run inside malloc.
[[noreturn]] inline void HeapCorrupted(const char* what) noexcept {
  static constexpr char kPrefix[] = "memarena: host heap invariant broken: ";
  platform::WriteStderr(kPrefix, sizeof kPrefix - 1);
  platform::WriteStderr(what, std::strlen(what));
  platform::WriteStderr("\n", 1);
  std::abort();
}

}  // namespace memarena::host
