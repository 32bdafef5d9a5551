// The object-start test of the free path: the pagemap entry of a small span's page, built
// so that "is `ptr` the start of one of the span's objects" is one multiply, one subtraction
// and one compare, with nothing computed from the page's place in its span.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "host/size_classes.h"

namespace memarena::host {

// Lemire's divisibility test in 56-bit arithmetic, with the span's origin folded into the
// entry. Per class: L = 2^56, c = ceil(L / size), e = size * c - L (0 <= e < size). An offset
// n = q * size from the origin maps to n * c mod L = q * e (< 2^20); an offset that is not a
// multiple of size maps to at least c (>= 2^38) and at most L - c + e + 2^20 (< L). The entry
// of every page of a span whose objects count from origin O is ((O * c - 1) mod L) << 8 |
// class, so
//   t = ptr * (c << 8) - entry  (mod 2^64)  = ((n * c mod L) + 1) * 256 - class
// lies in [256 - class, bound) exactly when n = q * size with q < objects, where
// bound = ((objects - 1) * e + 1) * 256: a start past the last object (the span's tail) maps
// to at least (objects * e + 1) * 256 - class >= bound when e > 0, and a power-of-two class
// (e = 0) has no tail. Everything else maps to at least 2^46. Class 0 (a large, free or
// foreign page) has entry 0, multiplier 0 and bound 0: every pointer fails.
// A full span's origin is its start. A short span (SizeClassInfo::short_pages) holds k =
// ObjectsIn(pages) < objects objects; its origin lies objects - k objects before its start,
// so its objects are the class's last k (q from objects - k to objects - 1), and the start of
// its tail is q = objects, which the bound refuses as it refuses a full span's.
struct ObjectStartTest {
  std::uint64_t multiplier = 0;  // c << 8
  std::uint64_t bound = 0;       // t < bound: an object start
};

namespace detail {

inline constexpr unsigned kEntryClassBits = 8;
inline constexpr unsigned kModulusBits = 64 - kEntryClassBits;  // L = 2^56

constexpr std::uint64_t Reciprocal(std::uint64_t size) {
  return ((std::uint64_t{1} << kModulusBits) - 1) / size + 1;
}

// The start tests as two arrays, each indexed by the class with a scale of 8 from one base
// (an array of 16-byte pairs needs the class shifted first). One table in the library:
// hidden, so the free path addresses it RIP-relative, not through the shared library's GOT
// (an internal-linkage copy for that had put a second one in the pages every program maps).
struct ObjectStartTests {
  std::uint64_t multiplier[kNumClasses + 1];
  std::uint64_t bound[kNumClasses + 1];
  constexpr ObjectStartTest operator[](std::size_t cls) const noexcept {
    return {multiplier[cls], bound[cls]};
  }
};

[[gnu::visibility("hidden")]] inline constexpr ObjectStartTests kObjectStartTests = [] {
  ObjectStartTests table{};
  constexpr std::uint64_t modulus_mask = (std::uint64_t{1} << kModulusBits) - 1;
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const std::uint64_t size = kClasses[cls].size;
    const std::uint64_t c = Reciprocal(size);
    const std::uint64_t e = (size * c) & modulus_mask;
    table.multiplier[cls] = c << kEntryClassBits;
    table.bound[cls] = ((kClasses[cls].objects - 1) * e + 1) << kEntryClassBits;
  }
  return table;
}();

constexpr bool PowerOfTwoClassesHaveNoTail() {
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const SizeClassInfo& c = kClasses[cls];
    const bool power_of_two = (c.size & (c.size - 1)) == 0;
    for (const std::uint64_t pages : {c.pages, c.short_pages}) {
      if (power_of_two && std::uint64_t{c.ObjectsIn(pages)} * c.size != pages * kPageSize) {
        return false;
      }
    }
  }
  return true;
}
static_assert(PowerOfTwoClassesHaveNoTail(), "the object-start test needs tail-free power-of-two spans");
static_assert(kNumClasses < (1u << kEntryClassBits), "a size class fits in the entry's low byte");
static_assert(kClasses[kNumClasses].pages * kPageSize <= (std::size_t{1} << 20) &&
                  kMaxSmallSize <= (std::size_t{1} << 18),
              "the bounds above assume spans of at most 1 MiB and objects of at most 256 KiB");

}  // namespace detail

inline constexpr unsigned kEntryClassMask = (1u << detail::kEntryClassBits) - 1;

// The pagemap entry of every page of a span of class `cls` (0: not a small span) of
// `num_pages` pages whose first page is `first_page`.
constexpr std::uint64_t ObjectStartEntry(std::uintptr_t first_page, std::size_t num_pages,
                                         std::size_t cls) noexcept {
  if (cls == 0) return 0;
  const SizeClassInfo& info = detail::kClasses[cls];
  const std::uint64_t origin = (std::uint64_t{first_page} << kPageShift) -
                               std::uint64_t{info.objects - info.ObjectsIn(num_pages)} * info.size;
  const std::uint64_t base = origin * detail::kObjectStartTests[cls].multiplier -
                             (std::uint64_t{1} << detail::kEntryClassBits);  // (O*c - 1) << 8
  return base | cls;
}

// True when `ptr`, on a page whose pagemap entry is `entry`, starts an object of that page's
// small span. `test` is the entry's class's (the free fast path passes the copy its thread
// cache keeps beside the class's list). False for any pointer on a page of class 0.
inline bool IsObjectStart(const void* ptr, std::uint64_t entry,
                          const ObjectStartTest& test) noexcept {
  return reinterpret_cast<std::uintptr_t>(ptr) * test.multiplier - entry < test.bound;
}

inline bool IsObjectStart(const void* ptr, std::uint64_t entry) noexcept {
  return IsObjectStart(ptr, entry, detail::kObjectStartTests[entry & kEntryClassMask]);
}

}  // namespace memarena::host
