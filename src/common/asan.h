// ASAN-aware memory: in AddressSanitizer builds the host heap and the arena poison memory
// they hold free (cached objects, free spans and chunks), so a use after free of memarena
// memory is reported as ASAN reports one of malloc's. Elsewhere these compile to nothing.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define MEMARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMARENA_ASAN 1
#endif
#endif

#if defined(MEMARENA_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace memarena::common {

inline constexpr bool kAsan =
#if defined(MEMARENA_ASAN)
    true;
#else
    false;
#endif

// Marks [ptr, ptr + bytes) as not to be touched by the program (ASAN builds only).
inline void PoisonFree(const void* ptr, std::size_t bytes) noexcept {
#if defined(MEMARENA_ASAN)
  ASAN_POISON_MEMORY_REGION(ptr, bytes);
#else
  (void)ptr;
  (void)bytes;
#endif
}

// Marks [ptr, ptr + bytes) as usable again (ASAN builds only).
inline void UnpoisonForUse(const void* ptr, std::size_t bytes) noexcept {
#if defined(MEMARENA_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(ptr, bytes);
#else
  (void)ptr;
  (void)bytes;
#endif
}

// True when ASAN would report an access to the byte at `ptr` (always false elsewhere): what
// the tests check the poisoning with.
inline bool IsPoisoned(const void* ptr) noexcept {
#if defined(MEMARENA_ASAN)
  return __asan_address_is_poisoned(ptr) != 0;
#else
  (void)ptr;
  return false;
#endif
}

}  // namespace memarena::common
