// Host size classes: the compile-time class table and the O(1) size -> class lookup.
// 16-byte steps up to 128 B, then 8 classes per doubling, so above 128 B a request wastes
// less than 1/8 of its size (below 128 B the waste is under one 16-byte granule).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace memarena::host {

inline constexpr std::size_t kPageShift = 13;  // 8 KiB heap pages (a multiple of the OS page)
inline constexpr std::size_t kPageSize = std::size_t{1} << kPageShift;
// 4 KiB is the smallest OS page of any Linux target; PageHeap::Grow checks the real one.
static_assert(kPageSize % 4096 == 0, "a heap page is a whole number of OS pages");
inline constexpr std::size_t kMinAlign = 16;  // every class size is a multiple of this
inline constexpr std::size_t kMaxSmallSize = std::size_t{256} << 10;
inline constexpr std::size_t kNumClasses = 97;  // classes are numbered 1..kNumClasses
inline constexpr std::size_t kClassesPerDoubling = 8;
// The 4 KiB class is two: one of 4 KiB + kColorBytes serves every request from 3841 B with
// an alignment of up to 128 B, and a 4 KiB one (aligned_only) the larger alignments.
// Objects 4 KiB apart all fall in one set of a 4 KiB-way L1 cache (x86-64: 64 sets of 64
// bytes), so a program that touches the start of many of them (and the heap, whose free
// reads each object's freed mark) missed L1 at every one past the cache's 8 ways: a batch
// of 100 allocations and frees took 10.4 ns each against 4.6 ns with the 128-byte shift,
// which spreads them over 32 sets (host_bench BM_Batch<Host>/4096/100; tcmalloc 8.4 ns).
// The cost is 3 % more memory for requests of 3841-4096 bytes. jemalloc offsets its large
// blocks within a page for the same reason (opt.cache_oblivious).
inline constexpr std::size_t kColoredSize = 4096;
inline constexpr std::size_t kColorBytes = 128;
static_assert((kColoredSize + kColorBytes) % 128 == 0,
              "above 1 KiB the lookup table steps by 128 bytes: every class is a multiple");
static_assert((kColoredSize + kColorBytes) % 4096 != 0 && kColorBytes % 64 == 0,
              "the colored size moves each object to another L1 set");
static_assert(kColoredSize + kColorBytes < kColoredSize + kColoredSize / kClassesPerDoubling,
              "the colored class stays below the next class (4608)");

struct SizeClassInfo {
  // Sixteen bytes: the table sits in the drop-in's first read-only segment, which every
  // program maps (override_footprint_test); 16-bit counts fit (static_assert below kClasses).
  std::uint32_t size = 0;         // object size
  std::uint16_t pages = 0;        // pages of one span of this class
  std::uint16_t batch = 0;        // objects moved between a thread cache and central at once
  std::uint16_t objects = 0;      // objects in one span
  // The span a class makes while it has fewer objects out than one span holds
  // (CentralCache::Remove): the shortest of at least kShortSpanBytes and one object whose
  // tail is at most 1/8 of it (the full span's rule), where that is shorter than the full
  // span; else the full span. A class a program uses a few objects of then keeps a short
  // partly carved span, not a 128 KiB one (testsuite: 3.1 MiB of never-carved objects).
  // The free's object-start test counts a short span's objects as the class's last ones,
  // so the start of its tail is no object (object_start.h).
  std::uint16_t short_pages = 0;
  std::uint16_t short_objects = 0;
  bool aligned_only = false;      // only ClassForAligned hands it out (kColoredSize)

  // Objects in a span of this class of `num_pages` pages: `objects` in a full span,
  // `short_objects` in a short one.
  constexpr std::uint32_t ObjectsIn(std::size_t num_pages) const noexcept {
    const std::size_t fit = num_pages * kPageSize / size;
    return fit < objects ? static_cast<std::uint32_t>(fit) : objects;
  }
};

// SizeClassInfo::short_pages' target.
inline constexpr std::size_t kShortSpanBytes = std::size_t{16} << 10;

namespace detail {

constexpr SizeClassInfo MakeClass(std::size_t size, bool aligned_only) {
  SizeClassInfo c;
  c.size = static_cast<std::uint32_t>(size);
  c.aligned_only = aligned_only;
  // Spans of about 16 objects (at least 4 pages, at most 128 KiB: each class keeps a
  // partly used span, and the 24 classes above 32 KiB with 1 MiB spans held 24 MiB for
  // 7 MiB in use in the testsuite workload), grown until the tail left over after the
  // last object is at most 1/8 of the span.
  std::size_t target = size * 16;
  if (target < 4 * kPageSize) target = 4 * kPageSize;
  if (target > (std::size_t{128} << 10)) target = std::size_t{128} << 10;
  std::size_t pages = (target + kPageSize - 1) / kPageSize;
  while ((pages * kPageSize) % size > (pages * kPageSize) / 8) ++pages;
  c.pages = static_cast<std::uint16_t>(pages);
  c.objects = static_cast<std::uint16_t>(pages * kPageSize / size);
  std::size_t short_pages = (std::max(size, kShortSpanBytes) + kPageSize - 1) / kPageSize;
  while (short_pages < pages && (short_pages * kPageSize) % size > (short_pages * kPageSize) / 8) {
    ++short_pages;
  }
  if (short_pages > pages) short_pages = pages;
  c.short_pages = static_cast<std::uint16_t>(short_pages);
  c.short_objects = static_cast<std::uint16_t>(short_pages * kPageSize / size);
  std::size_t batch = (std::size_t{64} << 10) / size;
  if (batch < 2) batch = 2;
  if (batch > 32) batch = 32;
  c.batch = static_cast<std::uint16_t>(batch);
  return c;
}

constexpr std::array<SizeClassInfo, kNumClasses + 1> BuildClasses() {
  std::array<SizeClassInfo, kNumClasses + 1> classes{};
  std::size_t n = 0;
  std::size_t size = 0;
  while (size < kMaxSmallSize) {
    if (size < 128) {
      size += kMinAlign;
    } else {
      std::size_t base = 128;
      while (base * 2 <= size) base *= 2;
      size += base / kClassesPerDoubling;
    }
    if (size == kColoredSize) {
      classes[++n] = MakeClass(size, true);
      classes[++n] = MakeClass(size + kColorBytes, false);
    } else {
      classes[++n] = MakeClass(size, false);
    }
  }
  return classes;
}

// Hidden: one copy, addressed RIP-relative (see kSmallTable).
[[gnu::visibility("hidden")]] inline constexpr std::array<SizeClassInfo, kNumClasses + 1>
    kClasses = BuildClasses();
static_assert(sizeof(SizeClassInfo) == 16);
static_assert(
    [] {
      for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
        const SizeClassInfo& c = kClasses[cls];
        if (c.objects != c.pages * kPageSize / c.size) return false;
        if (c.short_objects != c.short_pages * kPageSize / c.size) return false;
      }
      return true;
    }(),
    "a class's object count overflows its 16-bit field");

// Two tables, as tcmalloc: sizes up to 1 KiB in 16-byte steps, larger ones in 128-byte
// steps (every class above 1 KiB is a multiple of 128, so the lookup is exact).
inline constexpr std::size_t kSmallTableMax = 1024;

// One monotone pass per table (sizes only grow, so the class index only moves forward):
// cheap enough for every compiler's constant-evaluation step limit.
template <std::size_t kEntries, std::size_t kStep>
constexpr std::array<std::uint8_t, kEntries> BuildTable() {
  std::array<std::uint8_t, kEntries> t{};
  std::size_t c = 1;
  for (std::size_t i = 0; i < kEntries; ++i) {
    while (kClasses[c].size < i * kStep || kClasses[c].aligned_only) ++c;
    t[i] = static_cast<std::uint8_t>(c);
  }
  return t;
}

// Hidden: the fast paths address them RIP-relative, not through the shared library's GOT.
[[gnu::visibility("hidden")]] inline constexpr auto kSmallTable =
    BuildTable<kSmallTableMax / 16 + 1, 16>();
[[gnu::visibility("hidden")]] inline constexpr auto kLargeTable =
    BuildTable<kMaxSmallSize / 128 + 1, 128>();

static_assert(kClasses[kNumClasses].size == kMaxSmallSize, "classes must end at 256 KiB");
static_assert(kClasses[kNumClasses].pages <= 128, "a span of the largest class fits kMaxPages");

// A short span is no longer than the full one and holds an object. (A power-of-two class's
// spans have no tail: object_start.h checks that, its test needs it.)
constexpr bool ShortSpansAreShorterAndHoldAnObject() {
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const SizeClassInfo& c = kClasses[cls];
    if (c.short_pages > c.pages || c.short_objects == 0) return false;
    if (c.short_objects != c.ObjectsIn(c.short_pages)) return false;
  }
  return true;
}
static_assert(ShortSpansAreShorterAndHoldAnObject(), "a short span is shorter and holds an object");
// Span::size_class and the lookup tables hold a class in one byte.
static_assert(kNumClasses <= 255, "a size class fits in a std::uint8_t");

}  // namespace detail

// The class of a request of `size` bytes (0 < size <= kMaxSmallSize; 0 maps to class 1).
inline std::size_t ClassFor(std::size_t size) noexcept {
  return size <= detail::kSmallTableMax ? detail::kSmallTable[(size + 15) >> 4]
                                        : detail::kLargeTable[(size + 127) >> 7];
}

inline const SizeClassInfo& ClassInfo(std::size_t cls) noexcept { return detail::kClasses[cls]; }
inline std::size_t ClassSize(std::size_t cls) noexcept { return detail::kClasses[cls].size; }

// The smallest class holding `size` bytes whose objects are all `alignment`-aligned
// (alignment <= kPageSize; spans start on a page, so a class size that is a multiple of
// the alignment keeps every object aligned). An aligned_only class serves only the
// alignments its plain twin above cannot (64-byte-aligned 4 KiB tensors stay colored).
// 0 when none is small enough.
inline std::size_t ClassForAligned(std::size_t size, std::size_t alignment) noexcept {
  if (size < alignment) size = alignment;
  if (size > kMaxSmallSize) return 0;
  std::size_t cls = ClassFor(size);
  if (ClassSize(cls) % alignment != 0 && ClassInfo(cls - 1).aligned_only &&
      ClassSize(cls - 1) >= size) {
    --cls;
  }
  while (cls <= kNumClasses && ClassSize(cls) % alignment != 0) ++cls;
  return cls <= kNumClasses ? cls : 0;
}

}  // namespace memarena::host
