// Pagemap: a 2-level radix tree over 48-bit addresses mapping each heap page to its Span and
// its entry (size class and object-start term of a small span, with the class's start-test
// constants beside it), so Free finds a pointer's class, and whether it points at an
// object's start, with two dependent loads and no lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "host/object_start.h"
#include "host/size_classes.h"
#include "host/span.h"

namespace memarena::host {

class Pagemap {
 public:
  static constexpr std::size_t kAddressBits = 48;
  static constexpr std::size_t kLeafBits = 18;  // one leaf covers 2 GiB of address space
  static constexpr std::size_t kRootBits = kAddressBits - kPageShift - kLeafBits;
  static constexpr std::size_t kLeafLength = std::size_t{1} << kLeafBits;
  static constexpr std::size_t kRootLength = std::size_t{1} << kRootBits;

  static constexpr std::size_t kLeafBytes = kLeafLength * 32;  // address space of one leaf

  constexpr Pagemap() = default;
  Pagemap(const Pagemap&) = delete;
  Pagemap& operator=(const Pagemap&) = delete;

  static std::uintptr_t PageOf(const void* ptr) noexcept {
    return reinterpret_cast<std::uintptr_t>(ptr) >> kPageShift;
  }

  // The span covering `page`, or nullptr when the heap never reserved it. Lock-free.
  Span* Get(std::uintptr_t page) const noexcept {
    const Leaf* leaf = LeafOf(page);
    if (leaf == nullptr) return nullptr;
    return __atomic_load_n(&leaf->slot[page & (kLeafLength - 1)].span, __ATOMIC_RELAXED);
  }

  // The entry of the page holding `ptr`: for a page of a small span, its size class in the
  // low byte and the span's object-start term above it (object_start.h); 0 for a large,
  // free or foreign page. One load gives the free path both the class and the start test.
  static constexpr unsigned kClassMask = kEntryClassMask;
  std::uint64_t EntryOf(const void* ptr) const noexcept { return Find(ptr).entry; }

  // EntryOf, with the start test of the entry's class and the freed mark of a small object
  // on that page (invalid_free.h): the test's constants share the entry's line, so the free
  // path's check waits on this one lookup and not on the thread cache's list line as well
  // (which it needs only for the push); the mark is the address of the leaf that holds the
  // entry, which the lookup has in a register anyway. The words are read without the lock
  // while Set may rewrite them, so an entry may come with another class's test, but only on
  // a page whose span is being remapped, which no legal free names; a mismatched pair almost
  // never passes, and the slow path checks a failed one again with the entry's own class.
  struct Lookup {
    std::uint64_t entry = 0;
    ObjectStartTest start_test;     // all zero (fails every pointer) for class 0
    std::uintptr_t freed_mark = 0;  // 0 with entry 0 when no leaf covers the page
  };
  Lookup Find(const void* ptr) const noexcept {
    const std::uintptr_t page = PageOf(ptr);
    const Leaf* leaf = LeafOf(page);
    if (leaf == nullptr) return {};
    const Slot& slot = leaf->slot[page & (kLeafLength - 1)];
    return {__atomic_load_n(&slot.entry, __ATOMIC_RELAXED),
            {__atomic_load_n(&slot.start_test.multiplier, __ATOMIC_RELAXED),
             __atomic_load_n(&slot.start_test.bound, __ATOMIC_RELAXED)},
            reinterpret_cast<std::uintptr_t>(leaf)};
  }

  // The size class of the page holding `ptr` (0: large, free, or not a heap page).
  std::size_t ClassOf(const void* ptr) const noexcept { return EntryOf(ptr) & kClassMask; }

  // Makes sure leaves exist for [page, page + count). Returns false when the OS refuses
  // memory for a leaf. Callers serialize (the page heap lock).
  bool Ensure(std::uintptr_t page, std::size_t count) noexcept;

  // Maps `count` pages from `page` to `span` with class `size_class` (a small span is set
  // from its first page: the entries' start term assumes `page` is where it starts).
  // Leaves must exist.
  void Set(std::uintptr_t page, std::size_t count, Span* span, std::uint8_t size_class) noexcept;
  // Maps the first and last page only: enough for a free span's neighbours to find it.
  void SetEnds(Span* span) noexcept;

  // Bytes of leaf memory obtained from the OS (metadata, not counted as held).
  std::size_t MetadataBytes() const noexcept {
    return leaves_.load(std::memory_order_relaxed) * kLeafBytes;
  }

 private:
  // Leaves live in zeroed OS memory and are read without the lock while the heap writes
  // other entries, so entries are accessed with relaxed atomic builtins (plain moves on
  // x86, visible to TSAN). One page's slot is 32 bytes on a 32-byte boundary: the free
  // path reads its entry and start test from one line.
  struct alignas(32) Slot {
    std::uint64_t entry;
    ObjectStartTest start_test;
    Span* span;
  };
  static_assert(sizeof(Slot) == 32);
  struct Leaf {
    Slot slot[kLeafLength];
  };
  static_assert(sizeof(Leaf) == kLeafBytes);

  const Leaf* LeafOf(std::uintptr_t page) const noexcept {
    const std::uintptr_t index = page >> kLeafBits;
    if (index >= kRootLength) return nullptr;
    return root_[index].load(std::memory_order_acquire);
  }

  std::atomic<Leaf*> root_[kRootLength] = {};
  std::atomic<std::size_t> leaves_{0};
};

}  // namespace memarena::host
