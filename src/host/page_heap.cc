// PageHeap: free lists of spans (exact sizes up to kMaxPages, best fit above), splitting,
// coalescing, the ceiling on held bytes and release to the OS.
#include "host/page_heap.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <iterator>
#include <utility>

#include "common/asan.h"
#include "host/check.h"
#include "host/meta_pool.h"
#include "platform/os.h"

namespace memarena::host {
namespace {

constinit MetaPool<Span> g_span_records;

// `multiple` is a power of two (an alignment in pages).
std::uintptr_t RoundUp(std::uintptr_t value, std::uintptr_t multiple) noexcept {
  return (value + multiple - 1) & ~(multiple - 1);
}

bool Fits(const Span* span, std::size_t pages, std::size_t align_pages) noexcept {
  const std::uintptr_t start = RoundUp(span->first_page, align_pages);
  return start + pages <= span->first_page + span->num_pages;
}

int StateIndex(SpanState state) noexcept { return static_cast<int>(state); }

// Sets bit n of a bit array of 64-bit words to `on`.
void SetBit(std::uint64_t* words, std::size_t n, bool on) noexcept {
  const std::uint64_t bit = std::uint64_t{1} << (n % 64);
  words[n / 64] = on ? words[n / 64] | bit : words[n / 64] & ~bit;
}

}  // namespace

MetaPool<Span>& SpanRecords() noexcept { return g_span_records; }

// Split and merge make and drop span records in pairs; a few spares under the heap lock
// save the shared pool's lock on every large allocation.
Span* PageHeap::NewRecord() noexcept {
  Span* span = spare_records_;
  if (span == nullptr) return g_span_records.New();
  spare_records_ = span->next;
  --num_spare_records_;
  *span = Span{};
  return span;
}

void PageHeap::DeleteRecord(Span* span) noexcept {
  if (num_spare_records_ >= kMaxSpareRecords) {
    g_span_records.Delete(span);
    return;
  }
  span->next = spare_records_;
  spare_records_ = span;
  ++num_spare_records_;
}

SpanList& PageHeap::ListFor(SpanState state, std::size_t pages) noexcept {
  return pages <= kMaxPages ? free_[StateIndex(state)][pages] : large_[StateIndex(state)];
}

void PageHeap::Insert(Span* span) noexcept {
  ListFor(span->state, span->num_pages).Push(span);
  if (span->num_pages <= kMaxPages) {
    SetBit(nonempty_[StateIndex(span->state)], span->num_pages, true);
  }
  free_bytes_[StateIndex(span->state)] += span->Bytes();
  if (span->first_page + span->num_pages == open_end_) {
    open_end_span_ = span;
    pagemap_->SetFirst(span);
  } else {
    pagemap_->SetEnds(span);
  }
}

void PageHeap::CloseOpenEnd() noexcept {
  if (open_end_span_ != nullptr) pagemap_->SetEnds(open_end_span_);
  open_end_span_ = nullptr;
  open_end_ = 0;
}

void PageHeap::Unlink(Span* span) noexcept {
  SpanList& list = ListFor(span->state, span->num_pages);
  list.Remove(span);
  if (span->num_pages <= kMaxPages && list.Empty()) {
    SetBit(nonempty_[StateIndex(span->state)], span->num_pages, false);
  }
  free_bytes_[StateIndex(span->state)] -= span->Bytes();
  if (span == open_end_span_) open_end_span_ = nullptr;
}

// The span right after (or before) `span`, in any state; nullptr when that page is outside
// the heap. Only a span's ends are sure to be mapped to it (a large in-use span maps only its
// own ends, and an interior page may still name a record since reused), so the neighbour
// must also border `span` exactly.
Span* PageHeap::Neighbour(const Span* span, bool after) const noexcept {
  if (!after && span->first_page == 0) return nullptr;
  Span* neighbour = pagemap_->Get(after ? span->first_page + span->num_pages : span->first_page - 1);
  if (neighbour == nullptr || neighbour == span) return nullptr;
  const bool adjacent = after ? neighbour->first_page == span->first_page + span->num_pages
                              : neighbour->first_page + neighbour->num_pages == span->first_page;
  return adjacent ? neighbour : nullptr;
}

void PageHeap::MergeAndInsert(Span* span) noexcept {
  // Only neighbours in the same state merge: a committed span merged into a returned
  // one would either hide held bytes or need a syscall. Release (which decommits every
  // committed free span) lets everything merge.
  // Neighbour's test, with the state compared first: on a large free the neighbours are
  // mostly in use, and that one load settles it (through Neighbour, testsuite ran 0.4 % more
  // instructions).
  if (span->first_page > 0) {
    Span* prev = pagemap_->Get(span->first_page - 1);
    if (prev != nullptr && prev != span && prev->state == span->state &&
        prev->first_page + prev->num_pages == span->first_page) {
      Unlink(prev);
      span->first_page = prev->first_page;
      span->num_pages += prev->num_pages;
      span->huge_advised |= prev->huge_advised;
      DeleteRecord(prev);
    }
  }
  Span* next = pagemap_->Get(span->first_page + span->num_pages);
  if (next != nullptr && next != span && next->state == span->state &&
      next->first_page == span->first_page + span->num_pages) {
    Unlink(next);
    span->num_pages += next->num_pages;
    span->huge_advised |= next->huge_advised;
    DeleteRecord(next);
  }
  Insert(span);
}

Span* PageHeap::FindFit(SpanState state, std::size_t pages, std::size_t align_pages) noexcept {
  const int s = StateIndex(state);
  // The exact lists from `pages` up, skipping the empty ones by their bits (nonempty_): the
  // walk over all 128 lists was testsuite's largest cost after the program's own (10 % of
  // its instructions, cachegrind).
  for (std::size_t word = pages / 64; word < std::size(nonempty_[s]); ++word) {
    std::uint64_t bits = nonempty_[s][word];
    if (word == pages / 64) bits &= ~std::uint64_t{0} << (pages % 64);
    for (; bits != 0; bits &= bits - 1) {
      const std::size_t n = word * 64 + static_cast<std::size_t>(std::countr_zero(bits));
      for (Span* span = free_[s][n].Head(); span != nullptr; span = span->next) {
        if (align_pages <= 1 || Fits(span, pages, align_pages)) return span;
      }
    }
  }
  // Best fit among the big ones, lowest address on ties: keeps big runs whole.
  Span* best = nullptr;
  for (Span* span = large_[s].Head(); span != nullptr; span = span->next) {
    if (!Fits(span, pages, align_pages)) continue;
    if (best == nullptr || span->num_pages < best->num_pages ||
        (span->num_pages == best->num_pages && span->first_page < best->first_page)) {
      best = span;
    }
  }
  return best;
}

// The free span right after (or before) `span`, of either state; nullptr when that page is
// in use or outside the heap.
Span* PageHeap::FreeNeighbour(const Span* span, bool after) const noexcept {
  Span* neighbour = Neighbour(span, after);
  return neighbour != nullptr && neighbour->state != SpanState::kInUse ? neighbour : nullptr;
}

// The window of `pages` pages over the run of free spans around `anchor` that covers the
// anchor and reaches out from it `forward` (or backward) first, then the other way where
// the run ends: its committed pages, and its first page in `*start`. 0 when the run is
// shorter than the window.
std::size_t PageHeap::WindowAround(const Span* anchor, std::size_t pages, bool forward,
                                   std::uintptr_t* start) const noexcept {
  std::size_t covered = anchor->num_pages;
  std::size_t committed = anchor->num_pages;
  std::size_t before = 0;  // pages of the window before the anchor
  for (const bool after : {forward, !forward}) {
    for (const Span* span = anchor; covered < pages;) {
      span = FreeNeighbour(span, after);
      if (span == nullptr) break;
      const std::size_t take = std::min(span->num_pages, pages - covered);
      if (span->state == SpanState::kFree) committed += take;
      covered += take;
      if (!after) before += take;
    }
  }
  if (covered < pages) return 0;
  *start = anchor->first_page - before;
  return committed;
}

// No committed free span fits: the request goes where a run of adjacent free spans
// (committed and returned ones alternate: same-state neighbours are merged) covers the most
// committed pages, so only the returned pages inside it are committed (and faulted) instead
// of the whole request. Spans of different states never merge by themselves (see
// MergeAndInsert); this is where a committed span's pages meet returned ones. A window with
// the most committed pages starts or ends at a committed span's edge or at the run's end,
// so each committed span is tried as the window's first and as its last, slid back from
// the run's end. nullptr when no run is long enough or held may not grow by the difference.
Span* PageHeap::ExtendIntoReturned(std::size_t pages, std::uint8_t size_class,
                                   std::size_t* taken) noexcept {
  Span* anchor = nullptr;
  std::uintptr_t start = 0;
  std::size_t committed = 0;
  // Index kMaxPages + 1 stands for the large list (a loop, not a lambda: the analysis
  // checks a lambda's body without the caller's lock).
  for (std::size_t n = 1; n <= kMaxPages + 1; ++n) {
    if (n <= kMaxPages && n >= pages) continue;  // such a span would have fitted
    const SpanList& list = n <= kMaxPages ? free_[0][n] : large_[0];
    for (Span* span = list.Head(); span != nullptr; span = span->next) {
      for (const bool forward : {true, false}) {
        std::uintptr_t first = 0;
        const std::size_t c = WindowAround(span, pages, forward, &first);
        if (c > committed) {
          anchor = span;
          start = first;
          committed = c;
        }
      }
    }
  }
  if (anchor == nullptr) return nullptr;
  const std::size_t missing = pages - committed;
  const std::size_t threshold = threshold_.load(std::memory_order_relaxed);
  if (threshold != 0 && Held() + (missing << kPageShift) > threshold) return nullptr;
  // The window's committed spans stay out of the trim; the anchor's record survives it (a
  // committed span only merges when freed), the returned ones may merge with what it returns.
  PageRuns deferred;
  TrimBeforeGrowLocked(pages << kPageShift, start, start + pages, &deferred);
  // Before held grows: donors and the new pages are never counted at once.
  TakeDonors(missing, &deferred, start, start + pages);
  // A returned span that reaches past either end of the window is split: two records at
  // most, taken before anything changes so a refusal leaves the heap as it was.
  Span* spare[2] = {NewRecord(), NewRecord()};
  if (spare[0] == nullptr || spare[1] == nullptr || !ReserveHeld(missing << kPageShift)) {
    for (Span* record : spare) {
      if (record != nullptr) DeleteRecord(record);
    }
    FinishReleases(deferred, PageRuns{});
    return nullptr;
  }
  Span* span = anchor;
  while (span->first_page > start) span = FreeNeighbour(span, false);
  Span* merged = nullptr;
  PageRuns fresh;  // the window's returned pages (beyond kMax runs, the rest just fault)
  for (;;) {
    if (span->state == SpanState::kReturned) {
      const std::uintptr_t first = std::max<std::uintptr_t>(span->first_page, start);
      fresh.Add(first, std::min<std::uintptr_t>(span->first_page + span->num_pages,
                                                start + pages) - first);
      span = CommitPart(span, start, start + pages, spare);
    }
    merged = span;
    if (span->first_page + span->num_pages >= start + pages) break;
    span = FreeNeighbour(span, true);
  }
  for (Span* record : spare) {
    if (record != nullptr) DeleteRecord(record);
  }
  *taken = FinishReleases(deferred, fresh);
  return Carve(merged, pages, 1, size_class);
}

// The pages of returned span `span` inside [lo, hi) become committed (the caller reserved
// them in held) and merge with the committed spans beside them; the parts outside stay
// returned, in records taken from `spare`. Returns the merged committed span.
Span* PageHeap::CommitPart(Span* span, std::uintptr_t lo, std::uintptr_t hi, Span* spare[2]) noexcept {
  Unlink(span);
  const std::uintptr_t first = std::max<std::uintptr_t>(span->first_page, lo);
  const std::uintptr_t end = std::min<std::uintptr_t>(span->first_page + span->num_pages, hi);
  // The parts before and after [lo, hi) (a loop, not a lambda: see ExtendIntoReturned).
  const std::uintptr_t from[2] = {span->first_page, end};
  const std::uintptr_t to[2] = {first, span->first_page + span->num_pages};
  for (int i = 0; i < 2; ++i) {
    if (from[i] == to[i]) continue;
    Span* part = spare[0] != nullptr ? std::exchange(spare[0], nullptr) : std::exchange(spare[1], nullptr);
    part->first_page = from[i];
    part->num_pages = to[i] - from[i];
    part->state = SpanState::kReturned;
    Insert(part);
  }
  span->first_page = first;
  span->num_pages = end - first;
  span->state = SpanState::kFree;
  MergeAndInsert(span);
  return span;
}

// Class spans live as long as their longest-lived object; large blocks come and go. A free
// remainder left between two class spans is stranded until both empty, while one left beside
// a large block merges back when that block is freed. So a class span cut from a longer free
// span takes its back when the span after it is an in-use class span and the one before is
// not: the remainder then lies toward the other kind. With the front always taken,
// testsuite's peak held 72 free spans of 1-3 pages (1.2 MiB) stranded between class spans,
// and its peak RSS was 25.5 MiB against 24.3 with this (docs/host.md, "Class spans carved
// beside their kind"). Not also away from a large block when nothing is after (24.1 MiB):
// that put class spans at the top of the committed pages, beside the returned ones that
// large requests extend into, and the dynamic-shape replay of host_large_span_test held up
// to 1.23x its peak requested in 5 of 20 shuffled orders (bar 1.10x). A large block keeps
// the front: the free pages after it are where realloc grows it in place (GrowInPlace).
bool PageHeap::CarveFromBack(const Span* span, std::size_t pages,
                             std::uint8_t size_class) const noexcept {
  if (size_class == 0 || span->num_pages == pages) return false;
  auto is_class_span = [](const Span* neighbour) {
    return neighbour != nullptr && neighbour->state == SpanState::kInUse &&
           neighbour->size_class != 0;
  };
  return is_class_span(Neighbour(span, true)) && !is_class_span(Neighbour(span, false));
}

Span* PageHeap::Carve(Span* span, std::size_t pages, std::size_t align_pages,
                      std::uint8_t size_class, bool from_back) noexcept {
  Unlink(span);
  const std::uintptr_t start = from_back && align_pages <= 1
                                   ? span->first_page + span->num_pages - pages
                                   : RoundUp(span->first_page, align_pages);
  const std::size_t prefix = start - span->first_page;
  const std::size_t suffix = span->num_pages - prefix - pages;
  // Split records are taken before anything changes so a refused record leaves the span
  // whole (the caller then fails cleanly).
  Span* head = prefix != 0 ? NewRecord() : nullptr;
  Span* tail = suffix != 0 ? NewRecord() : nullptr;
  if ((prefix != 0 && head == nullptr) || (suffix != 0 && tail == nullptr)) {
    if (head != nullptr) DeleteRecord(head);
    if (tail != nullptr) DeleteRecord(tail);
    Insert(span);
    return nullptr;
  }
  if (head != nullptr) {
    head->first_page = span->first_page;
    head->num_pages = prefix;
    head->state = span->state;
    head->huge_advised = span->huge_advised;
    Insert(head);
  }
  if (tail != nullptr) {
    tail->first_page = start + pages;
    tail->num_pages = suffix;
    tail->state = span->state;
    tail->huge_advised = span->huge_advised;
    Insert(tail);
  }
  span->first_page = start;
  span->num_pages = pages;
  common::UnpoisonForUse(span->Start(), span->Bytes());  // poisoned while free (ASAN builds)
  span->state = SpanState::kInUse;
  span->size_class = size_class;
  span->allocated = 0;
  span->free_objects = nullptr;
  span->bump = span->bump_end = nullptr;
  span->edge_waits = false;
  span->requested = 0;
  span->in_central_list = false;
  span->fresh_pages = span->zero_pages = false;  // NewLocked sets them for pages from the OS
  if (size_class != 0) {
    pagemap_->Set(start, pages, span, size_class);  // any object's page finds its span
  } else {
    // A large block is only ever looked up by its start (Free, UsableSize) and by its
    // neighbours (merging), so its ends suffice; Owns asks the reservations.
    pagemap_->SetEnds(span);
  }
  in_use_bytes_ += span->Bytes();
  recent_in_use_.Tick(in_use_bytes_);
  return span;
}

namespace {

// Maps a reservation of `bytes` on a kReservationAlignment boundary (or on `alignment`,
// when that is larger or the aligned mapping fails). Why: the kernel places a reservation
// right below the mapping before it, often a metadata chunk; a 256 MiB reservation there
// left every heap line 256 MiB below a metadata line (the thread cache's lists, say), with
// the same address bits 12-27. AMD's L1 way predictor tags a line by a hash of those bits,
// so the two lines evict each other's prediction on every access: a malloc/free pair of
// 16 B in the heap's first line took 33-39 ns against 6.5 one line further (family-25
// EPYC). On a 256 MiB boundary the metadata's offset in the heap is its own address modulo
// 256 MiB, which the kernel's randomization moves away from the heap's first lines.
void* MapReservation(std::size_t bytes, std::size_t alignment) noexcept {
  if (alignment < PageHeap::kReservationAlignment) {
    if (void* memory = platform::MapPages(bytes, PageHeap::kReservationAlignment)) return memory;
  }
  return platform::MapPages(bytes, alignment);
}

}  // namespace

// Reserves `pages` pages (at least grow_bytes) starting on a multiple of `align_pages`
// pages: the OS aligns the reservation, so a huge alignment costs address space only, not
// a reservation of the alignment's size. Only the new span's ends are written to the
// pagemap (no per-page metadata for a range nobody touches).
bool PageHeap::Grow(std::size_t pages, std::size_t align_pages) noexcept {
  // The OS page size is known only now: spans are decommitted by heap page, which must be a
  // whole number of OS pages (16 or 64 KiB pages on some arm64 kernels are not).
  if (kPageSize % platform::PageSize() != 0) {
    HeapCorrupted("the OS page size does not divide the 8 KiB heap page (kPageShift)");
  }
  std::size_t bytes = pages << kPageShift;
  if (bytes < grow_bytes_) bytes = grow_bytes_;
  const std::size_t alignment = align_pages << kPageShift;
  void* memory = alignment <= kReservationAlignment ? MapBesideReservations(bytes) : nullptr;
  if (memory == nullptr) memory = MapReservation(bytes, alignment);
  if (memory == nullptr && bytes > (pages << kPageShift)) {
    bytes = pages << kPageShift;
    memory = MapReservation(bytes, alignment);
  }
  if (memory == nullptr) return false;
  // No huge pages but where the heap asks for them (TakeHugeInterior, CommitHugePage): under
  // THP "always" a fault in a small span would otherwise map 2 MiB, pages held does not
  // count included. The same state as after the advice is taken back, so the ranges merge.
  platform::AdviseHugePages(memory, bytes, false);
  const std::uintptr_t first = Pagemap::PageOf(memory);
  Span* span = NewRecord();
  Span* reservation = NewRecord();
  if (span == nullptr || reservation == nullptr ||
      !pagemap_->Ensure(first, bytes >> kPageShift)) {
    if (span != nullptr) DeleteRecord(span);
    if (reservation != nullptr) DeleteRecord(reservation);
    platform::UnmapPages(memory, bytes);
    return false;
  }
  reservation->first_page = first;
  reservation->num_pages = bytes >> kPageShift;
  reservation->next = reservations_;
  reservations_ = reservation;
  span->first_page = first;
  span->num_pages = bytes >> kPageShift;
  span->state = SpanState::kReturned;  // fresh pages are not touched, hence not held
  reserved_bytes_ += bytes;
  ++num_reserves_;
  // The new reservation may begin at the old open end, and the end it opens may be where
  // an older one begins (PlacesBeside puts them on either side).
  if (open_end_ != 0) CloseOpenEnd();  // not at the first: off the start-up text
  const std::uintptr_t end = first + (bytes >> kPageShift);
  bool bordered = false;
  for (const Span* r = reservations_; r != nullptr; r = r->next) bordered |= r->first_page == end;
  if (!bordered) open_end_ = end;
  MergeAndInsert(span);
  return true;
}

std::array<std::uintptr_t, 2> PageHeap::PlacesBeside(std::uintptr_t low, std::uintptr_t high,
                                                     std::uintptr_t leaf, std::size_t bytes,
                                                     std::size_t step) noexcept {
  const auto in_leaf = [leaf, bytes](std::uintptr_t start) {
    return start != 0 && (start >> kPageShift >> Pagemap::kLeafBits) == leaf &&
           ((start + bytes - 1) >> kPageShift >> Pagemap::kLeafBits) == leaf;
  };
  const std::uintptr_t away = step * kReservationAlignment;
  const std::uintptr_t below = low >= bytes + away
                                   ? (low - bytes - away) & ~(kReservationAlignment - 1)
                                   : 0;
  const std::uintptr_t above =
      ((high + kReservationAlignment - 1) & ~(kReservationAlignment - 1)) + away;
  return {in_leaf(below) ? below : 0, in_leaf(above) ? above : 0};
}

void* PageHeap::MapBesideReservations(std::size_t bytes) noexcept {
  if (reservations_ == nullptr) return nullptr;
  std::uintptr_t low = UINTPTR_MAX;
  std::uintptr_t high = 0;
  const Span* first = reservations_;
  for (const Span* r = reservations_; r != nullptr; r = r->next) {
    low = std::min(low, r->first_page << kPageShift);
    high = std::max(high, (r->first_page + r->num_pages) << kPageShift);
    first = r;  // the list is newest first
  }
  const std::uintptr_t leaf = first->first_page >> Pagemap::kLeafBits;
  for (std::size_t step = 0; step < kPlacementSteps; ++step) {
    for (const std::uintptr_t start : PlacesBeside(low, high, leaf, bytes, step)) {
      if (start == 0) continue;
      if (void* memory = platform::MapPagesAt(reinterpret_cast<void*>(start), bytes)) {
        return memory;
      }
    }
  }
  return nullptr;
}

bool PageHeap::Reserved(std::uintptr_t page) const noexcept {
  SpinLockHolder hold(lock_);
  for (const Span* r = reservations_; r != nullptr; r = r->next) {
    if (page >= r->first_page && page < r->first_page + r->num_pages) return true;
  }
  return false;
}

bool PageHeap::InFreeSpan(std::uintptr_t page) const noexcept {
  SpinLockHolder hold(lock_);
  for (int s = 0; s < kStates; ++s) {
    for (std::size_t n = 1; n <= kMaxPages + 1; ++n) {  // kMaxPages + 1: the large list
      const SpanList& list = n <= kMaxPages ? free_[s][n] : large_[s];
      for (const Span* span = list.Head(); span != nullptr; span = span->next) {
        if (page >= span->first_page && page <= span->LastPage()) return true;
      }
    }
  }
  return false;
}

bool PageHeap::ReserveHeld(std::size_t bytes) noexcept {
  // The budget is taken with a CAS against the ceiling before any page is committed, so
  // held never crosses the ceiling whatever the interleaving.
  std::size_t held = held_.load(std::memory_order_relaxed);
  for (;;) {
    const std::size_t ceiling = ceiling_.load(std::memory_order_relaxed);
    if (held + bytes < held) return false;
    if (ceiling != 0 && held + bytes > ceiling) return false;
    if (held_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed)) break;
  }
  std::size_t peak = peak_held_.load(std::memory_order_relaxed);
  while (held + bytes > peak &&
         !peak_held_.compare_exchange_weak(peak, held + bytes, std::memory_order_relaxed)) {
  }
  return true;
}

namespace {
void AddLocked(std::atomic<std::size_t>& counter, std::size_t add, std::size_t sub) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + add - sub, std::memory_order_relaxed);
}
}  // namespace

void PageHeap::CountNew(Span* span, std::size_t requested) noexcept {
  if (span == nullptr || span->size_class != 0) return;
  ++large_allocs_;
  CountLarge(span, span->Bytes(), requested);  // Carve left span->requested 0
}

// A large block gained `added_bytes` of span and now answers a request of `requested`.
void PageHeap::CountLarge(Span* span, std::size_t added_bytes, std::size_t requested) noexcept {
  if (requested > max_large_request_) max_large_request_ = requested;
  AddLocked(large_in_use_, added_bytes, 0);
  AddLocked(large_requested_, requested, span->requested);
  span->requested = requested;
}

Span* PageHeap::New(std::size_t pages, std::size_t align_pages, std::uint8_t size_class,
                    std::size_t requested, Failure* failure) noexcept {
  if (align_pages == 0) align_pages = 1;
  *failure = Failure::kNone;
  // Refuse sizes whose page arithmetic would overflow. The alignment is a power of two: the
  // callers' callers checked it once (the Allocator base class, the drop-in's C rules).
  if constexpr (kChecked) {
    if ((align_pages & (align_pages - 1)) != 0) HeapCorrupted("align_pages is not a power of two");
  }
  if (pages == 0 || pages > (std::size_t{1} << (Pagemap::kAddressBits - kPageShift)) ||
      align_pages > (std::size_t{1} << (Pagemap::kAddressBits - kPageShift))) {
    *failure = Failure::kOs;
    return nullptr;
  }
  // Read before the lock (its first read of the size is from sysfs).
  const std::size_t huge_page = HugePageIfUsable(size_class == 0, pages);
  Span* span = nullptr;
  std::uintptr_t lo = 0;
  std::uintptr_t hi = 0;
  std::uintptr_t fault_page = 0;
  bool advise = false;
  {
    SpinLockHolder hold(lock_);
    bool fresh = false;
    span = NewLocked(pages, align_pages, size_class, requested, huge_page, failure, &fresh,
                     &fault_page);
    advise = TakeHugeInterior(span, fresh, huge_page, &lo, &hi);
  }
  // Outside the lock: the block is the caller's alone, and the syscalls take the kernel's
  // mmap lock.
  if (advise) {
    platform::AdviseHugePages(reinterpret_cast<void*>(lo), hi - lo, true);
    fault_page = lo >> kPageShift;
  }
  if (fault_page != 0) TimeHugeFault(fault_page);
  return span;
}

// A large block uses a huge page only when it holds a whole one (TakeHugeInterior), and a
// small span only through CommitHugePage, past kHugeGrowthHeld. The size's first read is
// from sysfs: never at start-up, whose large blocks are all under kMinHugePageBytes.
std::size_t PageHeap::HugePageIfUsable(bool large_block, std::size_t pages) const noexcept {
  const bool may_hold_one = large_block && pages >= (kMinHugePageBytes >> kPageShift);
  if (!may_hold_one && Held() < kHugeGrowthHeld) return 0;
  return HugePagesInEffect() ? platform::HugePageSize() : 0;
}

// The fault happens here rather than at the program's first write, which it saves: the page
// is the caller's and inside a huge page just advised, so the kernel maps the whole huge
// page, as that write would have. A kernel without MADV_POPULATE_WRITE leaves it to the
// write, untimed. The thread's CPU time, not the wall clock: a fault preempted on a busy
// machine is not slow, while a host backing the huge page again stalls the vCPU inside the
// fault, and the guest counts that as the thread's time (6.6 ms per 2 MiB measured both
// ways on the VM of HugeFaultWatch's comment).
//
// A fault above the fixed bound first has the same bytes' cost in base pages measured
// (HugeFaultWatch's comment says why), once: kBasePageProbePages faults, about 0.2 ms here.
void PageHeap::TimeHugeFault(std::uintptr_t page) noexcept {
  const std::uint64_t start = platform::ThreadCpuNanos();
  if (!platform::PopulateForWrite(reinterpret_cast<void*>(page << kPageShift), kPageSize)) return;
  const std::uint64_t nanos = platform::ThreadCpuNanos() - start;
  if (huge_faults_.WantsBasePageEquivalent(nanos)) {
    const std::size_t base_pages = platform::HugePageSize() / platform::PageSize();
    huge_faults_.SetBasePageEquivalent(platform::BasePageFaultNanos(kBasePageProbePages) *
                                       base_pages);
  }
  huge_faults_.Record(nanos);
}

bool PageHeap::TakeHugeInterior(Span* span, bool fresh, std::size_t huge_page, std::uintptr_t* lo,
                                std::uintptr_t* hi) noexcept {
  if (span == nullptr || span->size_class != 0 || !fresh || huge_page == 0) return false;
  const auto start = reinterpret_cast<std::uintptr_t>(span->Start());
  *lo = RoundUp(start, huge_page);
  *hi = (start + span->Bytes()) & ~(std::uintptr_t{huge_page} - 1);
  if (*hi <= *lo) return false;
  if (!huge_faults_.Trusted()) *hi = std::min<std::uintptr_t>(*hi, *lo + huge_page);  // the trial
  span->huge_advised = true;
  ++huge_page_blocks_;
  return true;
}

// A request of `pages` that no committed free span fits, in a heap holding kHugeGrowthHeld
// or more: commits the first whole huge page of the returned spans (its record splits
// around it, and it merges with committed free neighbours) and asks for a transparent huge
// page on it; the request and the ones after it are carved from it. False, with nothing
// changed, for a request of a huge page or more (TakeHugeInterior serves those), when no
// returned span holds a whole huge page (no address space is reserved for one), or when
// held may not grow by one. Returns the huge page's first page number, or 0 when declined.
std::uintptr_t PageHeap::CommitHugePage(std::size_t pages, std::size_t huge_page) noexcept {
  const std::size_t huge_pages = huge_page >> kPageShift;
  if (huge_pages == 0 || pages >= huge_pages || Held() < kHugeGrowthHeld) return 0;
  const std::size_t threshold = threshold_.load(std::memory_order_relaxed);
  if (threshold != 0 && Held() + huge_page > threshold) return 0;
  // The trim first: what it returns merges with returned neighbours, records included.
  TrimBeforeGrowLocked(pages << kPageShift);
  Span* returned = FindFit(SpanState::kReturned, huge_pages, huge_pages);
  if (returned == nullptr) return 0;
  Span* spare[2] = {NewRecord(), NewRecord()};
  const bool ok = spare[0] != nullptr && spare[1] != nullptr && ReserveHeld(huge_page);
  std::uintptr_t first = 0;
  if (ok) {
    first = RoundUp(returned->first_page, huge_pages);
    CommitPart(returned, first, first + huge_pages, spare)->huge_advised = true;
    // Under the lock, once per huge page of growth: the pages are free, and a thread that
    // carved them before the advice would fault them in by 4 KiB.
    platform::AdviseHugePages(reinterpret_cast<void*>(first << kPageShift), huge_page, true);
    ++huge_pages_committed_;
  }
  for (Span* record : spare) {
    if (record != nullptr) DeleteRecord(record);
  }
  return first;
}

// New under the lock; `*fresh` says whether the span took pages the OS did not hold, and
// `*huge_fault_page` is the span's first page inside a huge page just committed for it
// (0 when none: New times that page's first fault).
Span* PageHeap::NewLocked(std::size_t pages, std::size_t align_pages, std::uint8_t size_class,
                          std::size_t requested, std::size_t huge_page, Failure* failure,
                          bool* fresh, std::uintptr_t* huge_fault_page) noexcept {
  Span* span = FindFit(SpanState::kFree, pages, align_pages);
  std::uintptr_t huge_first = 0;
  if (span == nullptr && align_pages < (huge_page >> kPageShift)) {
    huge_first = CommitHugePage(pages, huge_page);
    if (huge_first != 0) span = FindFit(SpanState::kFree, pages, align_pages);
  }
  if (span != nullptr) {
    // Not beside a huge page just committed: the fit starts where that page lies.
    const bool from_back = huge_first == 0 && CarveFromBack(span, pages, size_class);
    span = Carve(span, pages, align_pages, size_class, from_back);
    if (span == nullptr) *failure = Failure::kOs;
    // The fit may start in a committed neighbour the huge page merged with.
    if (span != nullptr && huge_first != 0) {
      const std::uintptr_t first = std::max(span->first_page, huge_first);
      const std::uintptr_t end =
          std::min(span->first_page + span->num_pages, huge_first + (huge_page >> kPageShift));
      if (first < end) *huge_fault_page = first;
    }
    CountNew(span, requested);
    CheckIfEnabled();
    return span;
  }
  if (align_pages == 1) {
    std::size_t taken = 0;
    span = ExtendIntoReturned(pages, size_class, &taken);
    if (span != nullptr) {
      span->fresh_pages = true;  // and committed pages: not zero_pages
      *fresh = taken == 0;       // see below
      CountNew(span, requested);
      CheckIfEnabled();
      return span;
    }
  }
  const std::size_t bytes = pages << kPageShift;
  const std::size_t threshold = threshold_.load(std::memory_order_relaxed);
  if (threshold != 0 && Held() + bytes > threshold && free_bytes_[0] != 0) {
    ReleaseFreeLocked();
  }
  PageRuns deferred;
  TrimBeforeGrowLocked(bytes, 0, 0, &deferred);
  // Before held grows, as in ExtendIntoReturned. A donor the span is then carved over keeps
  // its pages in place (FinishReleases).
  if (size_class == 0) TakeDonors(pages, &deferred, 0, 0);
  if (!ReserveHeld(bytes)) {
    FinishReleases(deferred, PageRuns{});
    *failure = Failure::kCeiling;
    return nullptr;
  }
  span = FindFit(SpanState::kReturned, pages, align_pages);
  if (span == nullptr && Grow(pages, align_pages)) {
    span = FindFit(SpanState::kReturned, pages, align_pages);
  }
  if (span != nullptr) span = Carve(span, pages, align_pages, size_class);
  PageRuns fresh_runs;
  if (span != nullptr) {
    fresh_runs.Add(span->first_page, span->num_pages);
  }
  const std::size_t taken = FinishReleases(deferred, fresh_runs);
  if (span == nullptr) {
    held_.fetch_sub(bytes, std::memory_order_relaxed);
    *failure = Failure::kOs;
  } else {
    // Returned or never committed: zero unless a decommit failed or old pages moved in.
    span->fresh_pages = taken < pages;
    span->zero_pages = !decommit_failed_ && taken == 0;
  }
  // A huge page is asked for and timed only on pages all fresh: one moved in would time
  // as a fast fault.
  *fresh = taken == 0;
  CountNew(span, requested);
  CheckIfEnabled();
  return span;
}

// How many of the `pages` pages right after `span` lie in returned spans, or SIZE_MAX when
// they are not all free (a free run alternates committed and returned spans: same-state
// neighbours are merged).
std::size_t PageHeap::ReturnedPagesAfter(const Span* span, std::size_t pages) const noexcept {
  std::size_t returned = 0;
  for (std::size_t covered = 0; covered < pages;) {
    span = FreeNeighbour(span, true);
    if (span == nullptr) return SIZE_MAX;
    const std::size_t take = std::min(span->num_pages, pages - covered);
    if (span->state == SpanState::kReturned) returned += take;
    covered += take;
  }
  return returned;
}

// realloc's growth without a copy: the free spans after the block give up their front
// pages to it. As in ExtendIntoReturned, only the returned pages in the window count as
// new held bytes, and the window stays out of the release and the trim that precede them
// (which may merge the records around it, hence the second walk; the pages' states stay).
bool PageHeap::GrowInPlace(Span* span, std::size_t pages, std::size_t requested) noexcept {
  const std::size_t huge_page = HugePageIfUsable(true, pages);
  std::uintptr_t lo = 0;
  std::uintptr_t hi = 0;
  bool grown = false;
  bool advise = false;
  {
    SpinLockHolder hold(lock_);
    bool fresh = false;
    grown = GrowInPlaceLocked(span, pages, requested, &fresh);
    advise = grown && TakeHugeInterior(span, fresh, huge_page, &lo, &hi);
  }
  if (advise) {
    platform::AdviseHugePages(reinterpret_cast<void*>(lo), hi - lo, true);
    TimeHugeFault(lo >> kPageShift);
  }
  return grown;
}

bool PageHeap::GrowInPlaceLocked(Span* span, std::size_t pages, std::size_t requested,
                                 bool* fresh) noexcept {
  if constexpr (kChecked) {
    if (span->state != SpanState::kInUse || span->size_class != 0) {
      HeapCorrupted("GrowInPlace of a span that is not a live large block");
    }
  }
  if (pages <= span->num_pages) return pages == span->num_pages;
  const std::size_t extra = pages - span->num_pages;
  const std::uintptr_t lo = span->first_page + span->num_pages;
  const std::uintptr_t hi = lo + extra;
  const std::size_t returned = ReturnedPagesAfter(span, extra);
  if (returned == SIZE_MAX) return false;
  if (returned != 0) {
    // Where a committed free span takes the whole grown block, moving there is cheaper than
    // committing pages here: the copy faults nothing, and that span would otherwise sit
    // unused until the trim returns it (realloc_grow 1: 15.2 k page faults and 273 releases
    // with this rule, 19.4 k and 744 without; 15.8 k and 259 when every block moved).
    if (FindFit(SpanState::kFree, pages, 1) != nullptr) return false;
    const std::size_t missing = returned << kPageShift;
    const std::size_t threshold = threshold_.load(std::memory_order_relaxed);
    if (threshold != 0 && Held() + missing > threshold && free_bytes_[0] != 0) {
      ReleaseDownToLocked(0, false, lo, hi);  // New's ReleaseFreeLocked, less the window
    }
    TrimBeforeGrowLocked(extra << kPageShift, lo, hi);
    if (!ReserveHeld(missing)) {
      CheckIfEnabled();
      return false;
    }
    *fresh = true;
  }
  // Each free span in the window is absorbed whole, or (the last) loses its front pages
  // and keeps its record and state for the rest.
  while (span->num_pages < pages) {
    Span* next = FreeNeighbour(span, true);
    Unlink(next);
    const std::size_t take = std::min(next->num_pages, pages - span->num_pages);
    span->num_pages += take;
    span->huge_advised |= next->huge_advised;
    if (take == next->num_pages) {
      DeleteRecord(next);
    } else {
      next->first_page += take;
      next->num_pages -= take;
      Insert(next);
    }
  }
  pagemap_->SetEnds(span);
  common::UnpoisonForUse(reinterpret_cast<char*>(lo << kPageShift), extra << kPageShift);
  in_use_bytes_ += extra << kPageShift;
  recent_in_use_.Tick(in_use_bytes_);
  CountLarge(span, extra << kPageShift, requested);
  CheckIfEnabled();
  return true;
}

void PageHeap::PrefaultForWrite(Span* span, std::size_t bytes) noexcept {
  const std::size_t pages = std::min(bytes >> kPageShift, span->num_pages);
  if (pages == 0 || !std::exchange(span->fresh_pages, false)) return;
  platform::PopulateForWrite(span->Start(), pages << kPageShift);
}

void PageHeap::Delete(Span* span) noexcept {
  SpinLockHolder hold(lock_);
  if (kChecked && span->state != SpanState::kInUse) HeapCorrupted("Delete of a free span");
  recent_in_use_.Tick(in_use_bytes_);  // before the drop: the peak includes this span
  in_use_bytes_ -= span->Bytes();
  if (span->size_class == 0) {
    ++large_frees_;
    AddLocked(large_in_use_, 0, span->Bytes());
    AddLocked(large_requested_, 0, span->requested);
  } else {
    pagemap_->Set(span->first_page, span->num_pages, span, 0);
  }
  span->state = SpanState::kFree;
  span->size_class = 0;
  // ASAN builds: a use after free is reported. Spans above 64 MiB are left alone (their
  // shadow would be written byte by byte); unpoisoning on Carve is cheap at any size.
  if (span->Bytes() <= (std::size_t{64} << 20)) common::PoisonFree(span->Start(), span->Bytes());
  MergeAndInsert(span);
  if (++deletes_since_scavenge_ >= kScavengeInterval) {
    deletes_since_scavenge_ = 0;
    ScavengeLocked();
  }
  CheckIfEnabled();
}

std::size_t PageHeap::KeptFreeBound() const noexcept {
  const std::size_t peak = recent_in_use_.Value();
  // What the program needed recently beyond what it uses now, plus a fixed allowance.
  return kMinKeptFree + (peak > in_use_bytes_ ? peak - in_use_bytes_ : 0);
}

// Hysteresis: up to the recent peak of in use (plus a slack) free spans stay committed, so
// a program whose sizes vary below a steady peak keeps reusing without a decommit/fault
// cycle; beyond it, free spans that did not fit are returned (whole spans) before `bytes`
// more count as in use. The smallest go first: a large one is what the next large request
// can reuse whole (large_buffers at scale 0.1: 180 k page faults, 192 k with the largest
// first). Spans in [keep_lo, keep_hi), which the request is about to use, stay.
void PageHeap::TrimBeforeGrowLocked(std::size_t bytes, std::uintptr_t keep_lo,
                                    std::uintptr_t keep_hi, PageRuns* deferred) noexcept {
  const std::size_t after = in_use_bytes_ + bytes;
  const std::size_t peak = std::max(recent_in_use_.Value(), after);
  const std::size_t keep = std::max(kMinKeptOnGrow, peak + peak / kGrowSlackDivisor - after);
  if (free_bytes_[0] > keep) ReleaseDownToLocked(keep, true, keep_lo, keep_hi, deferred);
}

// After a failed decommit (locked memory) a move could map pages the lock does not cover.
// While huge pages are in effect nothing moves: a donor's pages are mostly transparent huge
// pages, which mremap splits into base pages unless both ends are huge-page aligned, and
// the span that takes them then runs on base pages for its life. large_buffers at scale 0.1
// on a family-26 EPYC VM: 62 of 78 huge pages split and 1.9 s of user time with moves,
// against 52 of 263 and 1.1 s without (docs/host.md, "Page moves only without huge pages").
bool PageHeap::MovesAllowed() const noexcept {
  return !decommit_failed_ && !too_many_mappings_ && moves_refused_ < kMaxMoveRefusals &&
         !HugePagesInEffect();
}

bool PageHeap::HugePagesInEffect() const noexcept {
  return huge_pages_.load(std::memory_order_relaxed) && !huge_faults_.Slow() &&
         platform::HugePageSize() != 0;
}

bool PageHeap::MayMove() noexcept {
  if (++growths_since_map_count_ >= kMapCountInterval) {
    growths_since_map_count_ = 0;
    const std::size_t mappings = platform::CountMappings();
    too_many_mappings_ = mappings == 0 || mappings > kMaxMappingsForMoves;  // 0: unknown
  }
  return MovesAllowed();
}

// Once pages have moved, a run of kMinMovePages or more goes back by being mapped again,
// which mends the split mappings the moves left (each move's pages stay a mapping apart:
// without this, what a heap moved stays split after it gave everything back); its advice is
// put back as Grow leaves a reservation. Smaller runs, and every run before a move, are
// dropped in place: one call.
void PageHeap::ReturnPages(std::uintptr_t first_page, std::uintptr_t end_page) noexcept {
  if (first_page >= end_page) return;
  void* start = reinterpret_cast<void*>(first_page << kPageShift);
  const std::size_t bytes = (end_page - first_page) << kPageShift;
  if (num_moves_ != 0 && end_page - first_page >= kMinMovePages && !decommit_failed_) {
    // Resident again: future mappings are locked, and returned pages keep what they hold.
    if (!platform::RemapPages(start, bytes)) decommit_failed_ = true;
    platform::AdviseHugePages(start, bytes, false);
  } else if (!platform::DecommitPages(start, bytes)) {
    decommit_failed_ = true;
  }
}

void PageHeap::TakeDonors(std::size_t pages, PageRuns* deferred, std::uintptr_t keep_lo,
                          std::uintptr_t keep_hi) noexcept {
  std::size_t have = 0;
  bool asked = false;
  for (int i = 0; i < deferred->count; ++i) have += deferred->num_pages[i];
  // The large list, then the exact sizes from the largest: fewest calls for the pages.
  for (std::size_t n = kMaxPages + 1; n >= kMinMovePages && have < pages; --n) {
    SpanList& list = n <= kMaxPages ? free_[0][n] : large_[0];
    Span* span = list.Head();
    while (span != nullptr && have < pages && deferred->count < PageRuns::kMax) {
      Span* next = span->next;
      const bool kept = span->first_page + span->num_pages > keep_lo && span->first_page < keep_hi;
      if (!kept && span->num_pages <= pages - have) {
        if (!std::exchange(asked, true) && !MayMove()) return;
        have += span->num_pages;
        bytes_released_ += Decommit(span, deferred);
      }
      span = next;
    }
  }
}

std::uintptr_t PageHeap::SegmentEnd(const PageRuns& runs, std::uintptr_t at, std::uintptr_t end,
                                    bool* inside) noexcept {
  std::uintptr_t stop = end;
  for (int i = 0; i < runs.count; ++i) {
    const std::uintptr_t first = runs.first_page[i];
    const std::uintptr_t run_end = first + runs.num_pages[i];
    if (first <= at && at < run_end) {
      *inside = true;
      return std::min(run_end, end);
    }
    if (first > at) stop = std::min(stop, first);
  }
  *inside = false;
  return stop;
}

// Deferred pages that a fresh page lies over (NewLocked's span was carved from the returned
// span a trimmed span or a donor merged into) are still mapped, so they simply stay. The
// others are moved into the fresh pages no deferred page lies over, in order, kMinMovePages
// or more at a time. Whatever is left goes back to the OS.
std::size_t PageHeap::FinishReleases(const PageRuns& deferred, const PageRuns& fresh) noexcept {
  PageRuns holes;  // beyond kMax, the rest just fault
  for (int j = 0; j < fresh.count; ++j) {
    const std::uintptr_t end = fresh.first_page[j] + fresh.num_pages[j];
    for (std::uintptr_t at = fresh.first_page[j]; at < end;) {
      bool inside = false;
      const std::uintptr_t stop = SegmentEnd(deferred, at, end, &inside);
      if (!inside) holes.Add(at, stop - at);
      at = stop;
    }
  }
  const bool may_move = deferred.count != 0 && holes.count != 0 && MayMove();
  std::size_t taken = 0;
  int hole = 0;  // the hole the next moved page goes to, at page `next`
  std::uintptr_t next = holes.count != 0 ? holes.first_page[0] : 0;
  for (int i = 0; i < deferred.count; ++i) {
    const std::uintptr_t end = deferred.first_page[i] + deferred.num_pages[i];
    for (std::uintptr_t at = deferred.first_page[i]; at < end;) {
      bool inside = false;
      const std::uintptr_t stop = SegmentEnd(fresh, at, end, &inside);
      if (inside) {
        taken += stop - at;
      } else {
        const std::size_t moved = may_move ? MoveIntoHoles(at, stop, holes, &hole, &next) : 0;
        taken += moved;
        ReturnPages(at + moved, stop);
      }
      at = stop;
    }
  }
  return taken;
}

// Moves the pages from `first` on into the holes, from hole `*hole` at page `*next`, while
// both sides have kMinMovePages or more; returns how many moved.
std::size_t PageHeap::MoveIntoHoles(std::uintptr_t first, std::uintptr_t end, const PageRuns& holes,
                                    int* hole, std::uintptr_t* next) noexcept {
  const std::uintptr_t start = first;
  while (*hole < holes.count && end - first >= kMinMovePages && MovesAllowed()) {
    const std::uintptr_t hole_end = holes.first_page[*hole] + holes.num_pages[*hole];
    const std::size_t pages = std::min<std::size_t>(end - first, hole_end - *next);
    if (pages < kMinMovePages) {  // too short a rest of this hole: its pages fault in
      if (++*hole < holes.count) *next = holes.first_page[*hole];
      continue;
    }
    if (!platform::MovePages(reinterpret_cast<void*>(first << kPageShift),
                             reinterpret_cast<void*>(*next << kPageShift), pages << kPageShift)) {
      ++moves_refused_;
      break;
    }
    // Both ranges as Grow leaves a reservation (the moved pages keep their advice).
    platform::AdviseHugePages(reinterpret_cast<void*>(first << kPageShift), pages << kPageShift,
                              false);
    ++num_moves_;
    bytes_moved_ += pages << kPageShift;
    first += pages;
    *next += pages;
    if (*next == hole_end && ++*hole < holes.count) *next = holes.first_page[*hole];
  }
  return first - start;
}

// Committed free spans beyond the bound go back to the OS, smallest first, as in the trim
// on growth: the large ones kept are what a large request reuses without faulting.
// Under a ceiling the threshold release of New governs instead (and keeps free spans for
// reuse until held nears the ceiling).
void PageHeap::ScavengeLocked() noexcept {
  const std::size_t bound = KeptFreeBound();
  if (free_bytes_[0] <= bound || Ceiling() != 0) return;
  ReleaseDownToLocked(bound, true);
}

std::size_t PageHeap::ReleaseDownToLocked(std::size_t keep_bytes, bool smallest_first,
                                          std::uintptr_t keep_lo, std::uintptr_t keep_hi,
                                          PageRuns* deferred) noexcept {
  std::size_t released = 0;
  if (smallest_first) {
    for (std::size_t n = 1; n <= kMaxPages; ++n) {
      released +=
          ReleaseFromListLocked(free_[0][n], keep_bytes, false, keep_lo, keep_hi, deferred);
    }
    released += ReleaseFromListLocked(large_[0], keep_bytes, true, keep_lo, keep_hi, deferred);
  } else {
    released += ReleaseFromListLocked(large_[0], keep_bytes, false, keep_lo, keep_hi, deferred);
    for (std::size_t n = kMaxPages; n > 0; --n) {
      released +=
          ReleaseFromListLocked(free_[0][n], keep_bytes, false, keep_lo, keep_hi, deferred);
    }
  }
  bytes_released_ += released;
  return released;
}

// Decommits spans of `list` while more than `keep_bytes` stay committed: the smallest first
// or in list order, never one that overlaps [keep_lo, keep_hi).
std::size_t PageHeap::ReleaseFromListLocked(SpanList& list, std::size_t keep_bytes,
                                            bool smallest_first, std::uintptr_t keep_lo,
                                            std::uintptr_t keep_hi,
                                            PageRuns* deferred) noexcept {
  std::size_t released = 0;
  while (free_bytes_[0] > keep_bytes) {
    Span* pick = nullptr;
    for (Span* span = list.Head(); span != nullptr; span = span->next) {
      if (span->first_page + span->num_pages > keep_lo && span->first_page < keep_hi) continue;
      if (pick == nullptr || span->num_pages < pick->num_pages) pick = span;
      if (!smallest_first) break;
    }
    if (pick == nullptr) break;
    released += Decommit(pick, deferred);
  }
  return released;
}

// Returns a committed free span's pages to the OS (or leaves them to FinishReleases, when
// `deferred` has room); it then merges with returned neighbours.
std::size_t PageHeap::Decommit(Span* span, PageRuns* deferred) noexcept {
  const std::size_t bytes = span->Bytes();
  Unlink(span);
  // The advice goes first: returned pages must fault back as small pages (see Grow).
  if (std::exchange(span->huge_advised, false)) {
    platform::AdviseHugePages(span->Start(), bytes, false);
  }
  if (deferred == nullptr || !deferred->Add(span->first_page, span->num_pages)) {
    ReturnPages(span->first_page, span->first_page + span->num_pages);
  }
  ++num_releases_;
  held_.fetch_sub(bytes, std::memory_order_relaxed);
  span->state = SpanState::kReturned;
  MergeAndInsert(span);
  return bytes;
}

std::size_t PageHeap::ReleaseFreeLocked() noexcept {
  std::size_t released = 0;
  // Index kMaxPages + 1 stands for the large list (a loop, not a lambda: the analysis
  // checks a lambda's body without the caller's lock).
  for (std::size_t n = 1; n <= kMaxPages + 1; ++n) {
    SpanList& list = n <= kMaxPages ? free_[0][n] : large_[0];
    while (!list.Empty()) released += Decommit(list.Head());
  }
  bytes_released_ += released;
  return released;
}

std::size_t PageHeap::ReleaseFree(std::size_t keep_bytes) noexcept {
  SpinLockHolder hold(lock_);
  const std::size_t released = keep_bytes == 0 ? ReleaseFreeLocked() : ReleaseDownToLocked(keep_bytes);
  CheckIfEnabled();
  return released;
}

bool PageHeap::TrySetCeiling(std::size_t bytes) noexcept {
  SpinLockHolder hold(lock_);
  if (bytes != 0 && Held() > bytes) return false;
  ceiling_.store(bytes, std::memory_order_relaxed);
  threshold_.store(static_cast<std::size_t>(static_cast<double>(bytes) * release_ratio_),
                   std::memory_order_relaxed);
  return true;
}

void PageHeap::SetReleaseRatio(double ratio) noexcept {
  SpinLockHolder hold(lock_);
  release_ratio_ = ratio;
  threshold_.store(static_cast<std::size_t>(static_cast<double>(Ceiling()) * ratio),
                   std::memory_order_relaxed);
}

// Cold: read by stats and reports, never by an allocation, so it stays out of the start-up
// text that page_heap.cc's other functions share (src/override/libmemarena_malloc_startup.ld,
// whose 64 KiB window override_footprint_test guards).
[[gnu::cold]] PageHeapStats PageHeap::Stats() const noexcept {
  SpinLockHolder hold(lock_);
  PageHeapStats s;
  s.held = Held();
  s.peak_held = peak_held_.load(std::memory_order_relaxed);
  s.in_use = in_use_bytes_;
  s.free_committed = free_bytes_[0];
  s.free_returned = free_bytes_[1];
  for (const Span* span = large_[0].Head(); span != nullptr; span = span->next) {
    if (span->Bytes() > s.largest_free_committed) s.largest_free_committed = span->Bytes();
  }
  for (std::size_t n = kMaxPages; n > 0 && s.largest_free_committed == 0; --n) {
    if (!free_[0][n].Empty()) s.largest_free_committed = n << kPageShift;
  }
  auto count = [&s](const Span* span) {
    const std::size_t bucket = std::min<std::size_t>(std::bit_width(span->num_pages) - 1,
                                                      kFreeSpanBuckets - 1);
    ++s.free_by_length[bucket].spans;
    s.free_by_length[bucket].bytes += span->Bytes();
  };
  for (std::size_t n = 1; n <= kMaxPages; ++n) {
    for (const Span* span = free_[0][n].Head(); span != nullptr; span = span->next) count(span);
  }
  for (const Span* span = large_[0].Head(); span != nullptr; span = span->next) count(span);
  s.reserved = reserved_bytes_;
  s.num_reserves = num_reserves_;
  s.num_releases = num_releases_;
  s.bytes_released = bytes_released_;
  s.bytes_moved = bytes_moved_;
  s.moves_refused = moves_refused_;
  s.ceiling = Ceiling();
  s.large_allocs = large_allocs_;
  s.large_frees = large_frees_;
  s.max_large_request = max_large_request_;
  s.huge_page_blocks = huge_page_blocks_;
  s.huge_pages_committed = huge_pages_committed_;
  s.slow_huge_fault_nanos = huge_faults_.SwitchedOffAt();
  s.huge_pages_on = huge_pages_.load(std::memory_order_relaxed);
  s.huge_fault_bound_nanos = huge_faults_.Bound();
  return s;
}

void PageHeap::ResetPeak() noexcept {
  SpinLockHolder hold(lock_);
  peak_held_.store(Held(), std::memory_order_relaxed);
}

void PageHeap::CheckIfEnabled() const noexcept {
  if constexpr (kChecked) {
    if (const char* problem = CheckInvariantsLocked()) HeapCorrupted(problem);
  }
}

const char* PageHeap::CheckInvariants() const noexcept {
  SpinLockHolder hold(lock_);
  return CheckInvariantsLocked();
}

const char* PageHeap::CheckInvariantsLocked() const noexcept {
  std::size_t bytes[kStates] = {};
  // Copies: the lambda is analysed without the lock this function holds.
  const std::uintptr_t open_end = open_end_;
  const Span* const open_end_span = open_end_span_;
  auto check_list = [&](const SpanList& list, int state, std::size_t pages) -> const char* {
    for (const Span* span = list.Head(); span != nullptr; span = span->next) {
      if (StateIndex(span->state) != state) return "a span sits in the free list of another state";
      if (pages != 0 ? span->num_pages != pages : span->num_pages <= kMaxPages) {
        return "a span sits in the free list of another size";
      }
      if (span->huge_advised && span->state == SpanState::kReturned) {
        return "a returned span is still advised to use huge pages";
      }
      if (pagemap_->Get(span->first_page) != span ||
          (pagemap_->Get(span->LastPage()) != span && span != open_end_span)) {
        return "the pagemap does not map a free span's first and last page to it";
      }
      if ((span->first_page + span->num_pages == open_end) != (span == open_end_span)) {
        return "the free span at the reservation's open end is not the one recorded";
      }
      const Span* prev = pagemap_->Get(span->first_page - 1);
      if (prev != nullptr && prev->state == span->state &&
          prev->first_page + prev->num_pages == span->first_page) {
        return "two adjacent free spans of the same state were not merged";
      }
      const Span* next = pagemap_->Get(span->first_page + span->num_pages);
      if (next != nullptr && next->state == span->state &&
          next->first_page == span->first_page + span->num_pages) {
        return "two adjacent free spans of the same state were not merged";
      }
      bytes[state] += span->Bytes();
    }
    return nullptr;
  };
  for (int s = 0; s < kStates; ++s) {
    for (std::size_t n = 1; n <= kMaxPages; ++n) {
      if (const char* problem = check_list(free_[s][n], s, n)) return problem;
      const bool marked = (nonempty_[s][n / 64] >> (n % 64) & 1) != 0;
      if (marked == free_[s][n].Empty()) return "a free list's non-empty bit is wrong";
    }
    if (const char* problem = check_list(large_[s], s, 0)) return problem;
    if (bytes[s] != free_bytes_[s]) return "free-span byte counters disagree with the lists";
  }
  if (Held() != in_use_bytes_ + free_bytes_[0]) {
    return "held differs from in-use plus committed free spans";
  }
  if (reserved_bytes_ != in_use_bytes_ + free_bytes_[0] + free_bytes_[1]) {
    return "reserved differs from in-use plus committed and returned free spans";
  }
  std::size_t reservation_bytes = 0;
  for (const Span* r = reservations_; r != nullptr; r = r->next) reservation_bytes += r->Bytes();
  if (reservation_bytes != reserved_bytes_) {
    return "reserved differs from the sum of the reservations";
  }
  std::size_t spares = 0;
  for (const Span* r = spare_records_; r != nullptr; r = r->next) ++spares;
  if (spares != num_spare_records_ || spares > kMaxSpareRecords) {
    return "the spare span records disagree with their count";
  }
  const std::size_t ceiling = Ceiling();
  if (ceiling != 0 && Held() > ceiling) return "held exceeds the ceiling";
  return nullptr;
}

}  // namespace memarena::host
