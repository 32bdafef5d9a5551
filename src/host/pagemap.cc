// Pagemap leaves: allocated from the OS on demand (never from malloc) and never freed.
#include "host/pagemap.h"

#include "platform/os.h"

namespace memarena::host {

bool Pagemap::Ensure(std::uintptr_t page, std::size_t count) noexcept {
  const std::uintptr_t first = page >> kLeafBits;
  const std::uintptr_t last = (page + count - 1) >> kLeafBits;
  if (last >= kRootLength) return false;
  for (std::uintptr_t i = first; i <= last; ++i) {
    if (LeafLocked(i) != nullptr) continue;
    // MapPages memory is zeroed: every entry starts as "no span, class 0".
    void* memory = platform::MapPages(sizeof(Leaf), kPageSize);
    if (memory == nullptr) return false;
    // Under transparent huge pages "always" the first slot written would fault in 2 MiB of
    // the 32 MiB leaf; a leaf's pages are written a slot at a time, as the heap grows.
    platform::AdviseHugePages(memory, sizeof(Leaf), false);
    if (leaves_.fetch_add(1, std::memory_order_relaxed) == 0) {
      first_leaf_.store(static_cast<Leaf*>(memory), std::memory_order_relaxed);
      first_leaf_index_plus_1_.store(i + 1, std::memory_order_release);
    } else {
      root_[i].store(static_cast<Leaf*>(memory), std::memory_order_release);
    }
  }
  return true;
}

void Pagemap::Set(std::uintptr_t page, std::size_t count, Span* span,
                  std::uint8_t size_class) noexcept {
  const std::uint64_t entry = ObjectStartEntry(page, count, size_class);
  for (std::size_t i = 0; i < count; ++i) SetSlot(page + i, span, entry);
}

void Pagemap::SetEnds(Span* span) noexcept {
  SetFirst(span);
  if (span->num_pages > 1) SetSlot(span->LastPage(), span, 0);
}

}  // namespace memarena::host
