// Span: a run of heap pages, either in use (one large block, or carved into objects of a
// size class) or free (committed, or returned to the OS). SpanList: an intrusive list.
#pragma once

#include <cstddef>
#include <cstdint>

#include "host/size_classes.h"

namespace memarena::host {

enum class SpanState : std::uint8_t {
  kFree = 0,      // free and committed: counted in held, reusable without a syscall
  kReturned = 1,  // free and given back to the OS (DecommitPages): not held
  kInUse = 2,
};

// Span::sample_entry of a spare sampled span (see there).
inline constexpr std::uint32_t kSpareSampledSpan = ~std::uint32_t{0};

// Invariants (checked by PageHeap::CheckInvariants for free spans and by
// CentralCache::CheckInvariants for the small spans on its lists):
//   free span:  state != kInUse, size_class == 0, and the pagemap maps first_page and
//               LastPage() to it (LastPage() not for the span at the newest reservation's
//               open end, which no span follows: PageHeap::open_end_)
//   returned span: huge_advised == false (no page the OS does not hold for us is advised,
//               so a huge page never faults in pages that held does not count)
//   small span: allocated + length(free_objects) + (bump_end - bump) / size
//                   + (skipped_end - skipped) / size == ClassInfo(size_class).objects,
//               or .short_objects where num_pages == .short_pages != .pages
//               in_central_list == (length(free_objects) + (bump_end - bump) / size
//                                   + (skipped_end - skipped) / size > 0)
struct Span {
  std::uintptr_t first_page = 0;
  std::size_t num_pages = 0;
  Span* next = nullptr;
  Span* prev = nullptr;
  SpanState state = SpanState::kReturned;
  std::uint8_t size_class = 0;  // 0: a page-granular (large) block
  bool in_central_list = false;
  // Some of the span's pages may carry MADV_HUGEPAGE (PageHeap: a fresh large block's whole
  // huge pages, or a huge page committed for smaller requests). Kept through splits and
  // merges, so every advised page lies in a span with this set; cleared when the span is
  // decommitted, which takes the advice back first.
  bool huge_advised = false;
  // In-use large spans, as New left them (PageHeap::NewLocked sets both on every span):
  // fresh_pages: some pages came from the OS (returned or never committed) and nobody has
  // faulted them in since (PageHeap::PrefaultForWrite); after that a guess, which only
  // decides whether a prefault is worth a call.
  // zero_pages: every page came from the OS and none was written since, so all read as
  // zero (host::ZeroNew, calloc, clears it on its one use). Never set where unsure: a
  // stale true would hand calloc a block with old contents.
  bool fresh_pages = false;
  bool zero_pages = false;
  std::uint32_t allocated = 0;  // small spans: objects handed out of the span
  // Large spans: the heap sampler's table entry of their block (heap_sampler.h); 0 when the
  // block is not sampled; kSpareSampledSpan for a spare (heap.cc: a freed sampled span a
  // thread keeps, still in use to the page heap, for its next sample).
  std::uint32_t sample_entry = 0;
  void* free_objects = nullptr;  // small spans: freed objects, linked through their first word
  char* bump = nullptr;          // small spans: next never-used object (carved lazily so
  char* bump_end = nullptr;      // a new span's memory is not touched up front)
  // Small spans: who carves never-used objects (CentralCache::Remove; a thread cache's
  // address, never dereferenced). One thread carves [bump, bump_end) upwards from the front,
  // another downwards from the back, so two threads refilled from one span write no common
  // 4 KiB page until their ends meet; a third takes the front over on the next 4 KiB page.
  const void* front_carver = nullptr;
  const void* back_carver = nullptr;
  // Small spans: never-used objects a front takeover skipped, the rest of the old front
  // carver's 4 KiB page. Carved when [bump, bump_end) runs out; empty (equal) otherwise.
  char* skipped = nullptr;
  char* skipped_end = nullptr;
  // Small spans: the objects on the span's first CentralCache::kSpanEdgeBytes are not yet
  // carved. They come after [bump, bump_end) and the skipped rest, so while the span has
  // other objects left no thread runs into the lines just past the span below.
  bool edge_waits = false;
  std::size_t requested = 0;     // large spans: bytes the caller asked for

  char* Start() const noexcept { return reinterpret_cast<char*>(first_page << kPageShift); }
  std::size_t Bytes() const noexcept { return num_pages << kPageShift; }
  std::uintptr_t LastPage() const noexcept { return first_page + num_pages - 1; }
};

class SpanList {
 public:
  constexpr SpanList() = default;
  bool Empty() const noexcept { return head_ == nullptr; }
  Span* Head() const noexcept { return head_; }

  void Push(Span* span) noexcept {
    span->prev = nullptr;
    span->next = head_;
    if (head_ != nullptr) head_->prev = span;
    head_ = span;
  }

  void Remove(Span* span) noexcept {
    if (span->prev != nullptr) {
      span->prev->next = span->next;
    } else {
      head_ = span->next;
    }
    if (span->next != nullptr) span->next->prev = span->prev;
    span->next = span->prev = nullptr;
  }

 private:
  Span* head_ = nullptr;
};

}  // namespace memarena::host
