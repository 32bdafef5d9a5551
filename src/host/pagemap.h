// Pagemap: a 2-level radix tree over 48-bit addresses mapping each heap page to its Span and
// its entry (size class and object-start term of a small span), so Free finds a pointer's
// class, and whether it points at an object's start, with two dependent loads and no lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "host/object_start.h"
#include "host/size_classes.h"
#include "host/span.h"

namespace memarena::host {
namespace pagemap_detail {
// The start test of class `cls` (all zero for class 0).
inline ObjectStartTest StartTestOf(std::size_t cls) noexcept {
  return detail::kObjectStartTests[cls];
}
}  // namespace pagemap_detail

class Pagemap {
 public:
  static constexpr std::size_t kAddressBits = 48;
  // One leaf covers 16 GiB of address space (32 MiB of slots, committed as touched; the root
  // is 128 KiB), so that a heap up to 16 GiB whose reservations lie side by side (PageHeap::
  // PlacesBeside) is one leaf, the one LeafOf finds without the root's load. With 2 GiB
  // leaves a heap of two reservations used two leaves in one run of three.
  static constexpr std::size_t kLeafBits = 21;
  static constexpr std::size_t kRootBits = kAddressBits - kPageShift - kLeafBits;
  static constexpr std::size_t kLeafLength = std::size_t{1} << kLeafBits;
  static constexpr std::size_t kRootLength = std::size_t{1} << kRootBits;

  static constexpr std::size_t kLeafBytes = kLeafLength * 16;  // address space of one leaf

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

  // The freed mark is one byte into the leaf, not the leaf's own address. That address is
  // also the end of whatever mapping lies right below the leaf, and a program may hold such
  // an end. CPython's first `arenas` array (768 B) keeps arena 0's pool_address in its
  // second word, and that reaches the arena's end once all of its pools are carved: in about
  // one run in a hundred the kernel put that 1 MiB arena right below the leaf, and the
  // array's first realloc was reported as a double free (thirty-first session). No program
  // is handed an address inside the leaf.
  static constexpr std::uintptr_t kFreedMarkOffset = 1;

  // EntryOf, with the start test of the entry's class and the freed mark of a small object
  // on that page (invalid_free.h); the mark is derived from the address of the leaf that
  // holds the entry, which the lookup has in a register anyway (kFreedMarkOffset). The
  // entry is the one word of the slot the check reads, and the test is a constant of the
  // class it names, never a word of its own beside it: Set rewrites a page's slot without
  // the lock while frees read it, and a test stored beside the entry could be read from one
  // class with the entry from the next (a double free racing with its span's reuse could
  // then pass the check; issue 12). One word cannot tear, so a free sees the page as it was
  // before or after a Set, never a mix.
  struct Lookup {
    std::uint64_t entry = 0;
    ObjectStartTest start_test;     // all zero (fails every pointer) for class 0
    std::uintptr_t freed_mark = 0;  // 0 with entry 0 when no leaf covers the page
  };
  Lookup Find(const void* ptr) const noexcept {
    const std::uintptr_t page = PageOf(ptr);
    const Leaf* leaf = LeafOf(page);
    if (leaf == nullptr) return {};
    const std::uint64_t entry =
        __atomic_load_n(&leaf->slot[page & (kLeafLength - 1)].entry, __ATOMIC_RELAXED);
    return {entry, pagemap_detail::StartTestOf(entry & kClassMask),
            reinterpret_cast<std::uintptr_t>(leaf) + kFreedMarkOffset};
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
  // Maps the first and last page only, with class 0: enough for a free span's neighbours
  // to find it. Every split, merge and large block's allocation and free sets a span's ends:
  // its own call, not Set's loop, which made a quarter of the large-block path's
  // instructions (testsuite, cachegrind). Not inline: each of its five call sites in the
  // page heap would carry two slot writes into the start-up text (override_footprint_test).
  void SetEnds(Span* span) noexcept;
  // The first page only, with class 0 (PageHeap::Insert: a free span at a reservation's
  // open end, which no span follows).
  void SetFirst(Span* span) noexcept { SetSlot(span->first_page, span, 0); }

  // Bytes of leaf memory obtained from the OS (metadata, not counted as held).
  std::size_t MetadataBytes() const noexcept {
    return leaves_.load(std::memory_order_relaxed) * kLeafBytes;
  }

 private:
  // Leaves live in zeroed OS memory and are read without the lock while the heap writes
  // other entries, so entries are accessed with relaxed atomic builtins (plain moves on
  // x86, visible to TSAN). A slot is 16 bytes, 4 pages to a line: 32 bytes with the start
  // test beside the entry cost random_slots 8 % more D1 misses (docs/host.md).
  struct alignas(16) Slot {
    std::uint64_t entry;
    Span* span;
  };
  static_assert(sizeof(Slot) == 16);

  struct Leaf {
    Slot slot[kLeafLength];
  };
  static_assert(sizeof(Leaf) == kLeafBytes);

  // One page's slot; its leaf must exist.
  void SetSlot(std::uintptr_t page, Span* span, std::uint64_t entry) noexcept {
    Leaf* leaf = LeafLocked(page >> kLeafBits);
    Slot& slot = leaf->slot[page & (kLeafLength - 1)];
    __atomic_store_n(&slot.span, span, __ATOMIC_RELAXED);
    __atomic_store_n(&slot.entry, entry, __ATOMIC_RELAXED);
  }

  // The leaf at root index `index` (< kRootLength), or nullptr, for the heap's writers: under
  // the callers' lock, which also orders the first leaf's words, so relaxed loads and no
  // range test (a compare and a select; LeafOf's tests would grow start-up's text).
  Leaf* LeafLocked(std::uintptr_t index) const noexcept {
    return index + 1 == first_leaf_index_plus_1_.load(std::memory_order_relaxed)
               ? first_leaf_.load(std::memory_order_relaxed)
               : root_[index].load(std::memory_order_relaxed);
  }

  // The first leaf is kept only beside its index, not in the root, in two words that do not
  // depend on the pointer: their loads issue before the pointer arrives, and a pointer in
  // that leaf (all of a heap whose reservations stay in it) then waits on a compare and one
  // load, not on the root's load before the slot's. A free's list address comes from the entry, and the next
  // allocation's pop waits for its store, so the root load was on a malloc+free pair's chain
  // (issue 12: host_bench's pairs 8.5 -> 6.3-7.7 ns on AMD family 25; tcmalloc's 5.8-6.1).
  // Its root slot stays empty: a heap above 0x7f00'0000'0000 would write the root's 16th page
  // for it alone, a page of RSS in every process (issue 12's start-up footprint).
  const Leaf* LeafOf(std::uintptr_t page) const noexcept {
    const std::uintptr_t index = page >> kLeafBits;
    const std::uintptr_t first_index = first_leaf_index_plus_1_.load(std::memory_order_acquire) - 1;
    const Leaf* first = first_leaf_.load(std::memory_order_relaxed);
    if (index == first_index) [[likely]] {
      if (first == nullptr) __builtin_unreachable();  // no index matches before it is set
      return first;
    }
    if (index >= kRootLength) return nullptr;
    return root_[index].load(std::memory_order_acquire);
  }

  // The leaves after the first; the first one's slot stays nullptr (LeafOf).
  std::atomic<Leaf*> root_[kRootLength] = {};
  std::atomic<std::size_t> leaves_{0};
  // The first leaf and its root index + 1 (0 until it exists, so the pagemap stays in .bss),
  // written once, leaf first (release), under the callers' lock; never changed after.
  std::atomic<Leaf*> first_leaf_{nullptr};
  std::atomic<std::uintptr_t> first_leaf_index_plus_1_{0};
};

}  // namespace memarena::host
