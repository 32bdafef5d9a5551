// CentralCache: batch transfer of objects between thread caches and spans.
#include "host/central_cache.h"

#include <algorithm>
#include <utility>

#include "host/check.h"

namespace memarena::host {
namespace {

void*& NextOf(void* object) noexcept { return *static_cast<void**>(object); }

// Objects taken by one Remove, linked in the order taken.
struct Chain {
  void* first = nullptr;
  void* last = nullptr;
  int taken = 0;

  void Append(void* object) noexcept {
    if (last == nullptr) {
      first = object;
    } else {
      NextOf(last) = object;
    }
    last = object;
    ++taken;
  }
};

// A third carver's takeover of the front: it starts on the next kCarvePageBytes page, so it
// writes no page the old front carver is writing (false_sharing: the main thread's
// `checksums`, written by both workers, shared its page with the third carver's objects).
// The rest of the old page waits in Span::skipped until [bump, bump_end) runs out; while
// one rest waits, a takeover continues where the front stands.
void SkipToTheNextPage(Span& span, std::size_t size) noexcept {
  if (span.skipped != span.skipped_end) return;
  const auto at = reinterpret_cast<std::uintptr_t>(span.bump);
  const std::uintptr_t page_end =
      (at + CentralCache::kCarvePageBytes - 1) & ~(CentralCache::kCarvePageBytes - 1);
  const std::size_t skip = (page_end - at + size - 1) / size;  // objects starting before it
  if (skip == 0 || skip * size >= static_cast<std::size_t>(span.bump_end - span.bump)) return;
  span.skipped = span.bump;
  span.bump += skip * size;
  span.skipped_end = span.bump;
}

// Whether `carver` carves [bump, bump_end) from the back (else from the front), claiming a
// free end or taking the front over (Span::front_carver).
bool CarvesFromTheBack(Span& span, std::size_t size, const void* carver) noexcept {
  if (carver == nullptr || carver == span.front_carver) return false;
  if (carver == span.back_carver) return true;
  if (span.front_carver == nullptr) {
    span.front_carver = carver;
    return false;
  }
  if (span.back_carver == nullptr) {
    span.back_carver = carver;
    return true;
  }
  span.front_carver = carver;
  SkipToTheNextPage(span, size);
  return false;
}

// Objects of `size` bytes that start on a span's first CentralCache::kSpanEdgeBytes.
std::size_t ObjectsOnEdge(std::size_t size) noexcept {
  return (CentralCache::kSpanEdgeBytes + size - 1) / size;
}

// The objects whose carve waits (Span::edge_waits): none when they would be all of its
// `objects`.
std::size_t EdgeObjects(std::size_t size, std::size_t objects) noexcept {
  const std::size_t edge = ObjectsOnEdge(size);
  return edge < objects ? edge : 0;
}

// Objects of `span` never carved: [bump, bump_end), the skipped rest and the waiting edge.
std::size_t UncarvedObjects(const Span& span, const SizeClassInfo& info) noexcept {
  return static_cast<std::size_t>(span.bump_end - span.bump) / info.size +
         static_cast<std::size_t>(span.skipped_end - span.skipped) / info.size +
         (span.edge_waits ? EdgeObjects(info.size, info.ObjectsIn(span.num_pages)) : 0);
}

// Whether a span in a class list has nothing left to hand out (and leaves the list).
bool Exhausted(const Span& span) noexcept {
  return span.free_objects == nullptr && span.bump == span.bump_end &&
         span.skipped == span.skipped_end && !span.edge_waits;
}

// A new span of `info`'s class: its objects from the end of the edge on, to be carved.
void StartCarving(Span& span, const SizeClassInfo& info) noexcept {
  const std::size_t objects = info.ObjectsIn(span.num_pages);
  const std::size_t edge = EdgeObjects(info.size, objects);
  span.bump = span.Start() + edge * info.size;
  span.bump_end = span.Start() + objects * info.size;
  span.front_carver = span.back_carver = nullptr;
  span.skipped = span.skipped_end = nullptr;
  span.edge_waits = edge != 0;
}

// [bump, bump_end) ran out: the skipped rest, then the edge, become the range to carve, from
// a fresh claim (anyone carves them). False when nothing is left.
bool NextUncarvedRange(Span& span, std::size_t size) noexcept {
  if (span.skipped != span.skipped_end) {
    span.bump = std::exchange(span.skipped, nullptr);
    span.bump_end = std::exchange(span.skipped_end, nullptr);
  } else if (span.edge_waits) {
    span.bump = span.Start();
    span.bump_end = span.Start() + ObjectsOnEdge(size) * size;
    span.edge_waits = false;
  } else {
    return false;
  }
  span.front_carver = span.back_carver = nullptr;
  return true;
}

bool MidLinePair(const char* at) noexcept {
  return reinterpret_cast<std::uintptr_t>(at) % CentralCache::kCarveAlignBytes != 0;
}

// Carves never-used objects of `span` from `carver`'s end until `chain` holds `goal` (with
// `line_pairs`, on to the next line-pair boundary).
void Carve(Span& span, std::size_t size, const void* carver, int goal, bool line_pairs,
           Chain& chain) noexcept {
  if (chain.taken >= goal) return;
  if (span.bump == span.bump_end && !NextUncarvedRange(span, size)) return;
  if (CarvesFromTheBack(span, size, carver)) {
    const char* start = span.bump_end;
    for (; (chain.taken < goal ||
            (line_pairs && span.bump_end != start && MidLinePair(span.bump_end))) &&
           span.bump < span.bump_end;
         ++span.allocated) {
      span.bump_end -= size;
      chain.Append(span.bump_end);
    }
    return;
  }
  const char* start = span.bump;
  for (; (chain.taken < goal || (line_pairs && span.bump != start && MidLinePair(span.bump))) &&
         span.bump < span.bump_end;
       span.bump += size) {
    chain.Append(span.bump);
    ++span.allocated;
  }
}

}  // namespace

int CentralCache::Remove(std::size_t cls, int count, void** head, void** tail,
                         Failure* failure, CarveEnd carve_end, const void* carver) noexcept {
  const SizeClassInfo& info = ClassInfo(cls);
  ClassList& list = ListOf(cls);
  Chain chain;
  SpinLockHolder hold(list.lock);
  if (static_cast<std::uint32_t>(count) == info.batch && list.num_batches != 0) {
    const Batch& batch = BatchAt(list, --list.num_batches);
    list.free_objects -= info.batch;
    AddFreed(list, -static_cast<std::ptrdiff_t>(info.batch));
    *head = batch.head;
    *tail = batch.tail;
    return count;
  }
  int reused = 0;  // objects taken from spans' free lists (the rest were carved)
  while (chain.taken < count) {
    Span* span = list.spans.Head();
    if (span == nullptr) {
      // A class with fewer objects out than a full span holds gets a short one: what it
      // leaves uncarved is then bounded by what it uses.
      const bool little_used = list.span_objects - list.free_objects < info.objects;
      // Lock order: a class lock, then the page heap lock; never the other way round.
      span = Heap().New(little_used ? info.short_pages : info.pages, 1,
                        static_cast<std::uint8_t>(cls), 0, failure);
      if (span == nullptr) break;
      StartCarving(*span, info);
      span->in_central_list = true;
      list.spans.Push(span);
      const std::size_t objects = info.ObjectsIn(span->num_pages);
      list.free_objects += objects;
      list.span_objects += objects;
    }
    while (chain.taken < count && span->free_objects != nullptr) {
      void* object = span->free_objects;
      span->free_objects = NextOf(object);
      chain.Append(object);
      ++span->allocated;
      ++reused;
    }
    Carve(*span, info.size, carver, count, carve_end == CarveEnd::kLinePair, chain);
    if (Exhausted(*span)) {
      list.spans.Remove(span);
      span->in_central_list = false;
    }
  }
  list.free_objects -= static_cast<std::size_t>(chain.taken);
  AddFreed(list, -reused);
  if (chain.last != nullptr) NextOf(chain.last) = nullptr;
  *head = chain.first;
  *tail = chain.last;
  return chain.taken;
}

int CentralCache::RemoveFreed(std::size_t cls, int count, void** head, void** tail) noexcept {
  const SizeClassInfo& info = ClassInfo(cls);
  ClassList& list = ListOf(cls);
  Chain chain;
  SpinLockHolder hold(list.lock);
  if (list.num_batches != 0) {
    // A whole batch when that is what is asked; else the batch goes back to its spans,
    // whose free lists the walk below takes from.
    const Batch batch = BatchAt(list, --list.num_batches);
    list.free_objects -= info.batch;
    AddFreed(list, -static_cast<std::ptrdiff_t>(info.batch));
    if (static_cast<std::uint32_t>(count) == info.batch) {
      *head = batch.head;
      *tail = batch.tail;
      return count;
    }
    InsertObjects(list, cls, batch.head, static_cast<int>(info.batch));
  }
  Span* span = list.spans.Head();
  for (int walked = 0; span != nullptr && walked < kFreedWalk && chain.taken < count;
       ++walked) {
    Span* next = span->next;
    while (chain.taken < count && span->free_objects != nullptr) {
      void* object = span->free_objects;
      span->free_objects = NextOf(object);
      chain.Append(object);
      ++span->allocated;
    }
    if (Exhausted(*span)) {
      list.spans.Remove(span);
      span->in_central_list = false;
    }
    span = next;
  }
  list.free_objects -= static_cast<std::size_t>(chain.taken);
  AddFreed(list, -chain.taken);
  if (chain.last != nullptr) NextOf(chain.last) = nullptr;
  *head = chain.first;
  *tail = chain.last;
  return chain.taken;
}

std::size_t CentralCache::BatchSlots(std::size_t cls) noexcept {
  const SizeClassInfo& info = ClassInfo(cls);
  return std::min(kMaxBatches, kTransferBytes / (std::size_t{info.batch} * info.size));
}

void CentralCache::Insert(std::size_t cls, void* head, void* tail, int count,
                          BatchTo batch_to) noexcept {
  ClassList& list = ListOf(cls);
  SpinLockHolder hold(list.lock);
  if (batch_to == BatchTo::kTransferCache &&
      static_cast<std::uint32_t>(count) == ClassInfo(cls).batch &&
      list.num_batches < BatchSlots(cls)) {
    BatchAt(list, list.num_batches++) = Batch{head, tail};
    list.free_objects += static_cast<std::size_t>(count);
    AddFreed(list, count);
    return;
  }
  InsertObjects(list, cls, head, count);
}

void CentralCache::Drain() noexcept {
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    ClassList& list = ListOf(cls);
    SpinLockHolder hold(list.lock);
    const int count = static_cast<int>(ClassInfo(cls).batch);
    while (list.num_batches != 0) {
      const Batch batch = BatchAt(list, --list.num_batches);
      list.free_objects -= static_cast<std::size_t>(count);
      AddFreed(list, -count);
      InsertObjects(list, cls, batch.head, count);
    }
  }
}

void CentralCache::AddFreed(ClassList& list, std::ptrdiff_t delta) noexcept {
  list.freed.store(list.freed.load(std::memory_order_relaxed) + static_cast<std::size_t>(delta),
                   std::memory_order_relaxed);
}

void CentralCache::InsertObjects(ClassList& list, std::size_t cls, void* head,
                                 int count) noexcept {
  const SizeClassInfo& info = ClassInfo(cls);
  std::ptrdiff_t freed = 0;
  for (int i = 0; i < count; ++i) {
    void* object = head;
    head = NextOf(object);
    Span* span = Map().Get(Pagemap::PageOf(object));
    if (kChecked && (span == nullptr || span->state != SpanState::kInUse ||
                     span->size_class != cls || span->allocated == 0)) {
      HeapCorrupted("an object returned to the central cache does not belong to its class");
    }
    NextOf(object) = span->free_objects;
    span->free_objects = object;
    ++list.free_objects;
    ++freed;
    if (!span->in_central_list) {
      list.spans.Push(span);
      span->in_central_list = true;
    }
    if (--span->allocated == 0) {
      list.spans.Remove(span);
      span->in_central_list = false;
      const std::size_t objects = info.ObjectsIn(span->num_pages);
      list.free_objects -= objects;
      list.span_objects -= objects;
      freed -= static_cast<std::ptrdiff_t>(objects - UncarvedObjects(*span, info));
      Heap().Delete(span);
    }
  }
  AddFreed(list, freed);
}

std::size_t CentralCache::FreeObjects(std::size_t cls, std::size_t* uncarved) const noexcept {
  const ClassList& list = ListOf(cls);
  SpinLockHolder hold(list.lock);
  // ClassList's invariant: free_objects = freed + the objects not yet carved.
  if (uncarved != nullptr) {
    *uncarved = list.free_objects - list.freed.load(std::memory_order_relaxed);
  }
  return list.free_objects;
}

const char* CentralCache::CheckInvariants() const noexcept {
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const ClassList& list = ListOf(cls);
    SpinLockHolder hold(list.lock);
    if (const char* problem = CheckClass(list, cls)) return problem;
  }
  return nullptr;
}

const char* CentralCache::CheckClass(const ClassList& list, std::size_t cls) noexcept {
  const SizeClassInfo& info = ClassInfo(cls);
  std::size_t freed = list.num_batches * info.batch;
  std::size_t free_in_list = freed;
  std::size_t listed_objects = 0;
  for (const Span* span = list.spans.Head(); span != nullptr; span = span->next) {
    if (span->state != SpanState::kInUse || span->size_class != cls || !span->in_central_list) {
      return "a span on a central list is not an in-use span of the list's class";
    }
    const std::size_t objects = info.ObjectsIn(span->num_pages);
    if (span->num_pages != info.pages && span->num_pages != info.short_pages) {
      return "a small span's length is neither its class's full span nor its short span";
    }
    std::size_t free = 0;
    for (void* object = span->free_objects; object != nullptr && free <= objects;
         object = NextOf(object)) {
      ++free;
    }
    freed += free;
    free += UncarvedObjects(*span, info);
    if (free == 0) return "a central list holds a span with no free object";
    if (span->allocated + free != objects) {
      return "a small span's allocated plus free objects differ from its object count";
    }
    listed_objects += objects;
    free_in_list += free;
  }
  if (list.span_objects < listed_objects) {
    return "a central list's span objects are fewer than those of the spans on it";
  }
  if (free_in_list != list.free_objects) {
    return "a central list's free-object count differs from its spans and batches";
  }
  if (freed != list.freed.load(std::memory_order_relaxed)) {
    return "a central list's freed-object count differs from its spans' free lists and batches";
  }
  return nullptr;
}

void CentralCache::LockAll() noexcept {
  for (ClassList& list : lists_) list.lock.lock();
}

void CentralCache::UnlockAll() noexcept {
  for (ClassList& list : lists_) list.lock.unlock();
}

}  // namespace memarena::host
