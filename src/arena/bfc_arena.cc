// BfcArena: ORT BFCArena's allocate/free/extend/shrink over a MemorySource, plus alignment,
// release of free regions under pressure, and stream-ordered reuse.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <new>
#include <stdexcept>

#include "arena/address_map.h"
#include "arena/arena_failure.h"
#include "arena/arena_watermarks.h"
#include "arena/chunk_store.h"
#include "arena/decommit_policy.h"
#include "arena/expandable_space.h"
#include "arena/growth_policy.h"
#include "common/asan.h"
#include "common/format.h"
#include "common/mutex.h"
#include "common/release_registry.h"
#include "common/usage_counters.h"
#include "memarena/arena.h"
#include "memarena/errors.h"
#include "memarena/virtual_memory_source.h"

namespace memarena {

using arena::ArenaFailure;
using arena::Chunk;
using arena::ChunkHandle;
using arena::FailureKind;
using arena::kInvalidChunk;
using arena::kMinAllocationSize;

namespace {

constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

// How many fitting free chunks past the best fit an expandable arena looks at for one that
// needs no commit.
constexpr int kCommittedLookahead = 8;

std::uintptr_t AlignUp(std::uintptr_t value, std::size_t alignment) {
  return (value + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
}

// The source an expandable arena needs; throws ConfigError naming the key otherwise.
VirtualMemorySource* ExpandableSource(MemorySource& source, const ArenaConfig& config) {
  if (!config.expandable_segments) return nullptr;
  auto* virtual_source = dynamic_cast<VirtualMemorySource*>(&source);
  if (virtual_source == nullptr) {
    throw ConfigError(fmt::format(
        "bad value '1' for key 'expandable_segments': source '{}' is not a VirtualMemorySource "
        "(use HostVirtualMemorySource, a CUDA virtual-memory source, or expandable_segments:0)",
        source.name()));
  }
  return virtual_source;
}

}  // namespace

struct BfcArena::Impl {
  Impl(std::shared_ptr<MemorySource> s, const ArenaConfig& c, std::shared_ptr<StreamFence> f)
      : source(std::move(s)),
        fence(std::move(f)),
        config(c),
        limit(c.max_mem == 0 ? kUnlimited : c.max_mem),
        growth(c),
        name(fmt::format("bfc_arena({}{})", source->name(), c.expandable_segments ? ", expandable" : "")),
        poison(common::kAsan && source->HostAccessible()) {
    if (VirtualMemorySource* v = ExpandableSource(*source, c)) space.emplace(*v, stats);
  }

  std::shared_ptr<MemorySource> source;
  std::shared_ptr<StreamFence> fence;
  const ArenaConfig config;
  const std::size_t limit;
  arena::GrowthPolicy growth MEMARENA_GUARDED_BY(mutex);
  const std::string name;
  // Sanitizer builds poison free chunks of host memory (common/asan.h), so a use after free
  // of arena memory is reported; device and simulated addresses are never touched.
  const bool poison;

  mutable common::Mutex mutex;
  arena::ChunkStore store MEMARENA_GUARDED_BY(mutex);
  arena::AddressMap in_use MEMARENA_GUARDED_BY(mutex);
  // Counters; derived fields are filled in by Snapshot(). Guarded by `mutex` but not
  // annotated: the WatermarkWatch built before the lock keeps a reference to it, and reads it
  // only under the lock (its Reading), which the analysis cannot see.
  common::UsageCounters stats;
  bool had_first_region MEMARENA_GUARDED_BY(mutex) = false;
  // Where a contiguously growing source continues.
  std::uintptr_t last_piece_end MEMARENA_GUARDED_BY(mutex) = 0;
  // Set when expandable_segments.
  std::optional<arena::ExpandableSpace> space MEMARENA_GUARDED_BY(mutex);
  arena::DecommitPolicy decommit MEMARENA_GUARDED_BY(mutex){config.expandable_decommit_threshold};
  common::WatermarkLevels watermarks;  // against config.max_mem; see arena_watermarks.h

  struct Reservation {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    std::size_t attempts = 0;
    std::size_t first_try = 0;
    std::size_t last_try = 0;
  };

  // Slack an aligned request needs so that some start inside a fresh region is aligned.
  std::size_t AlignmentSlack(std::size_t alignment) const {
    const std::size_t base = source->Alignment();
    return alignment > base ? alignment - base : 0;
  }

  std::size_t AvailableBytes() const MEMARENA_REQUIRES(mutex) {
    const std::size_t room = limit - std::min(limit, stats.bytes_held);
    return room / kMinAllocationSize * kMinAllocationSize;
  }

  void PoisonFree(std::uintptr_t addr, std::size_t bytes) const {
    if (poison) common::PoisonFree(reinterpret_cast<const void*>(addr), bytes);
  }
  // Also before a range goes back to the source: whoever maps those addresses next starts clean.
  void UnpoisonForUse(std::uintptr_t addr, std::size_t bytes) const {
    if (poison) common::UnpoisonForUse(reinterpret_cast<const void*>(addr), bytes);
  }

  bool Usable(const Chunk& c, StreamHandle stream) const {
    return c.stream == 0 || c.stream == stream || fence->HasCompleted(c.stream, c.fence);
  }

  // Free memory that no stream may still be using: only that may be decommitted.
  arena::ExpandableSpace::Eligible Settled() const {
    return [this](const Chunk& c) { return Usable(c, 0); };
  }

  // Expandable: makes room for committing `extra` more bytes that will hold `in_use_after`
  // bytes in use, by decommitting free granules outside [keep_begin, keep_end) when held
  // would cross max_mem or exceed in use by more than the threshold. Fills `failure` when
  // max_mem still does not allow it.
  bool MakeRoom(std::size_t extra, std::size_t in_use_after, std::uintptr_t keep_begin,
                std::uintptr_t keep_end, ArenaFailure& failure) MEMARENA_REQUIRES(mutex) {
    const std::size_t held_after = stats.bytes_held + extra;
    const std::size_t over_limit = held_after > limit ? held_after - limit : 0;
    const std::size_t over_threshold = decommit.ExcessBeforeCommit(held_after, in_use_after);
    if (over_limit != 0 || over_threshold != 0) {
      space->DecommitFree(store, Settled(), keep_begin, keep_end, std::max(over_limit, over_threshold));
    }
    if (stats.bytes_held + extra > limit) {
      failure.kind = FailureKind::kLimit;
      failure.available = AvailableBytes();
      return false;
    }
    return true;
  }

  // Expandable: commits the holes under [addr, addr + bytes) before it is handed out; when
  // the source refuses, gives back every other free granule and tries once more.
  bool Back(std::uintptr_t addr, std::size_t bytes, ArenaFailure& failure) MEMARENA_REQUIRES(mutex) {
    const std::uintptr_t end = addr + bytes;
    const std::size_t extra = space->HolesIn(addr, end);
    if (extra == 0) return true;
    if (!MakeRoom(extra, stats.bytes_in_use + bytes, addr, end, failure)) return false;
    if (space->CommitCovering(addr, end)) return true;
    if (space->DecommitFree(store, Settled(), addr, end, kUnlimited) > 0 &&
        space->CommitCovering(addr, end)) {
      return true;
    }
    failure.kind = FailureKind::kSource;
    failure.attempts = 1;
    failure.first_try = failure.last_try = space->HolesIn(addr, end);
    failure.capacity = source->Capacity();
    return false;
  }

  // Best fit, lowest address first, walking up from the request's bin (ORT's FindChunkPtr),
  // skipping chunks that cannot hold an aligned start or are still in flight on a stream.
  // An expandable arena commits what the chunk lacks first; when that fails it returns
  // nullptr with `failure` filled in.
  void* FindAndTake(std::size_t rounded, std::size_t bytes, std::size_t alignment,
                    StreamHandle stream, ArenaFailure& failure) MEMARENA_REQUIRES(mutex) {
    const int first = arena::BinForSize(rounded);
    ChunkHandle best = kInvalidChunk;
    std::size_t best_pad = 0;
    int looked_past_best = 0;
    for (int b = first; b < arena::kNumBins && looked_past_best < kCommittedLookahead; ++b) {
      const auto& bin = store.bin(b);
      auto it = b == first ? bin.lower_bound({rounded, 0, 0}) : bin.begin();
      for (; it != bin.end() && looked_past_best < kCommittedLookahead; ++it) {
        const Chunk& c = store.at(it->handle);
        const std::size_t pad =
            alignment > kMinAllocationSize ? AlignUp(c.addr, alignment) - c.addr : 0;
        if (c.size < rounded + pad || !Usable(c, stream)) continue;
        // An expandable arena takes a slightly worse fit that needs no commit over the best
        // fit that does: commits (and the decommits they force) are system calls.
        if (!space || space->HolesIn(c.addr + pad, c.addr + pad + rounded) == 0) {
          if (space && !Back(c.addr + pad, rounded, failure)) return nullptr;
          return Take(it->handle, pad, rounded, bytes, stream);
        }
        if (best == kInvalidChunk) {
          best = it->handle;
          best_pad = pad;
        } else {
          ++looked_past_best;
        }
      }
    }
    if (best == kInvalidChunk) return nullptr;
    const Chunk& c = store.at(best);
    if (!Back(c.addr + best_pad, rounded, failure)) return nullptr;
    return Take(best, best_pad, rounded, bytes, stream);
  }

  // A free chunk whose stream work has completed carries no stream any more, so neighbours
  // freed on different streams merge (as ONNX Runtime's arena does once their events
  // completed). Walks every chunk: only on the growth and release paths, never per call.
  void SettleCompletedFrees() MEMARENA_REQUIRES(mutex) {
    if (fence == nullptr) return;
    for (const auto& [base, region] : store.regions()) {
      for (ChunkHandle h = region.head; h != kInvalidChunk; h = store.at(h).next) {
        Chunk& c = store.at(h);
        if (c.in_use || c.stream == 0 || !fence->HasCompleted(c.stream, c.fence)) continue;
        c.stream = 0;
        c.fence = 0;
        store.RemoveFree(h);
        h = store.Coalesce(h);
        store.InsertFree(h);
      }
    }
  }

  // ReleaseUnusedSpans and ReleaseAllUnusedRegions: settle, give back, restart growth.
  std::size_t Release(bool include_pinned) {
    arena::WatermarkWatch watch(watermarks, stats, config.max_mem, name);
    common::MutexLock lock(mutex);
    const arena::WatermarkWatch::Reading reading(watch);
    SettleCompletedFrees();
    std::size_t released = ReleaseFreeRegions(include_pinned);
    if (space) {  // expandable: every free granule goes back too
      released += space->DecommitFree(store, Settled(), 0, 0, kUnlimited);
      decommit.Restart(stats.bytes_in_use);
    }
    growth.ResetAfterShrink();
    return released;
  }

  void* Take(ChunkHandle h, std::size_t pad, std::size_t rounded, std::size_t bytes,
             StreamHandle stream) MEMARENA_REQUIRES(mutex) {
    store.RemoveFree(h);
    if (pad != 0) {  // the unaligned front stays a free chunk of its own
      store.Split(h, pad);
      const ChunkHandle aligned = store.at(h).next;
      store.RemoveFree(aligned);
      store.InsertFree(h);
      h = aligned;
    }
    // ORT's split rule; a chunk exactly the request's size is never split. An expandable
    // arena always splits: the free rest can be decommitted, so it is never dead weight.
    const std::size_t size = store.at(h).size;
    if (size > rounded && (space || size >= rounded * 2 ||
                           size - rounded >= config.max_dead_bytes_per_chunk)) {
      store.Split(h, rounded);
    }
    Chunk& c = store.at(h);
    c.in_use = true;
    c.requested = bytes;
    c.stream = stream;
    c.fence = 0;
    in_use.Insert(c.addr, h);
    stats.OnAllocate(c.size, bytes);
    if (space) decommit.NoteInUse(stats.bytes_in_use);
    UnpoisonForUse(c.addr, c.size);
    return reinterpret_cast<void*>(c.addr);
  }

  void* ReserveOnce(std::size_t bytes) MEMARENA_REQUIRES(mutex) {
    void* p = source->Reserve(bytes);
    if (p != nullptr && reinterpret_cast<std::uintptr_t>(p) % kMinAllocationSize != 0) {
      source->Release(p, bytes);  // breaks the source contract; treat as a refusal
      p = nullptr;
    }
    if (p != nullptr) ++stats.num_reserves;
    return p;
  }

  // ORT's backoff: 0.9x until below the request or 8 KiB; then, beyond ORT, the request itself.
  Reservation ReserveWithBackoff(std::size_t bytes, std::size_t needed) MEMARENA_REQUIRES(mutex) {
    Reservation r{nullptr, bytes, 1, bytes, bytes};
    r.ptr = ReserveOnce(bytes);
    while (r.ptr == nullptr) {
      bytes = arena::BackoffBytes(bytes);
      if (bytes < needed || bytes < arena::kMinBackoffBytes) break;
      ++r.attempts;
      r.last_try = r.bytes = bytes;
      r.ptr = ReserveOnce(bytes);
    }
    if (r.ptr == nullptr && r.last_try > needed) {
      ++r.attempts;
      r.last_try = r.bytes = needed;
      r.ptr = ReserveOnce(needed);
    }
    return r;
  }

  bool FullyFree(const arena::Region& region) const MEMARENA_REQUIRES(mutex) {
    for (ChunkHandle h = region.head; h != kInvalidChunk; h = store.at(h).next) {
      const Chunk& c = store.at(h);
      if (c.in_use || (c.stream != 0 && !fence->HasCompleted(c.stream, c.fence))) return false;
    }
    return true;
  }

  // Gives back every region with nothing in use (the pinned first one only when asked).
  std::size_t ReleaseFreeRegions(bool include_pinned) MEMARENA_REQUIRES(mutex) {
    std::size_t released = 0;
    const auto& regions = store.regions();
    for (auto it = regions.begin(); it != regions.end();) {
      const auto current = it++;
      if ((current->second.pinned && !include_pinned) || !FullyFree(current->second)) continue;
      const std::size_t size = current->second.size;
      const std::size_t held = space ? space->ForgetRegion(current->first, size) : size;
      const std::vector<arena::Piece> pieces =
          store.RemoveRegion(store.RegionOf(current->first));
      for (const arena::Piece& p : pieces) {
        UnpoisonForUse(p.addr, p.size);
        source->Release(reinterpret_cast<void*>(p.addr), p.size);
      }
      stats.OnRelease(held, pieces.size());
      stats.num_arena_extensions -= pieces.size();
      ++stats.num_arena_shrinkages;
      released += held;
    }
    return released;
  }

  // Beyond ORT: under kSameAsRequested (or expandable) on a contiguously growing source, the
  // free chunk at the end of the newest range will merge with the next one, so only the
  // rest is needed.
  std::size_t FreeTailBytes(std::size_t alignment) MEMARENA_REQUIRES(mutex) {
    if ((config.arena_extend_strategy != ArenaExtendStrategy::kSameAsRequested && !space) ||
        !source->GrowsContiguously() || last_piece_end == 0 || alignment > kMinAllocationSize) {
      return 0;
    }
    const auto& regions = store.regions();
    auto region = regions.lower_bound(last_piece_end);
    if (region == regions.begin()) return 0;
    --region;
    if (region->first + region->second.size != last_piece_end) return 0;
    const Chunk& tail = store.at(region->second.tail);
    return tail.in_use || tail.stream != 0 ? 0 : tail.size;
  }

  // ORT's Extend, plus TF's release-and-retry before failing. Fills `failure` on failure.
  // With `use_tail`, bytes already free at the end of the newest range count toward `needed`.
  bool Extend(std::size_t needed, std::size_t alignment, bool use_tail, ArenaFailure& failure) MEMARENA_REQUIRES(mutex) {
    if (space) return ExtendExpandable(needed, alignment, use_tail, failure);
    std::size_t available = AvailableBytes();
    if (needed > available) {
      ReleaseFreeRegions(/*include_pinned=*/true);
      available = AvailableBytes();
      if (needed > available) {
        failure.kind = FailureKind::kLimit;
        failure.available = available;
        return false;
      }
    }
    std::size_t tail = use_tail ? FreeTailBytes(alignment) : 0;
    if (tail >= needed) tail = 0;
    const std::size_t ask = needed - tail;
    const arena::GrowthPolicy before = growth;
    const std::size_t bytes = std::min(growth.NextExtension(ask), available);
    Reservation r = ReserveWithBackoff(bytes, ask);
    if (r.ptr == nullptr && ReleaseFreeRegions(/*include_pinned=*/true) > 0) {
      // The tail may have gone with the released regions: ask for the whole request.
      const Reservation retry =
          ReserveWithBackoff(std::min(std::max(bytes, needed), AvailableBytes()), needed);
      r.ptr = retry.ptr;
      r.bytes = retry.bytes;
      r.attempts += retry.attempts;
      r.last_try = retry.last_try;
    }
    if (r.ptr == nullptr) {
      // Beyond ORT: a refused extension leaves the growth size as it was, so one huge failed
      // request does not make the next small one ask for (and back off into) most of the device.
      growth = before;
      failure.kind = FailureKind::kSource;
      failure.attempts = r.attempts;
      failure.first_try = r.first_try;
      failure.last_try = r.last_try;
      failure.capacity = source->Capacity();
      return false;
    }
    const bool pinned =
        config.arena_extend_strategy == ArenaExtendStrategy::kNextPowerOfTwo && !had_first_region;
    try {
      store.AddPiece(reinterpret_cast<std::uintptr_t>(r.ptr), r.bytes,
                     source->MergesAdjacent() && !pinned, pinned);
    } catch (const std::bad_alloc&) {  // AddPiece changed nothing: the range goes back
      source->Release(r.ptr, r.bytes);
      growth = before;
      failure.kind = FailureKind::kMetadata;
      return false;
    }
    PoisonFree(reinterpret_cast<std::uintptr_t>(r.ptr), r.bytes);
    had_first_region = true;
    last_piece_end = reinterpret_cast<std::uintptr_t>(r.ptr) + r.bytes;
    stats.OnHold(r.bytes);
    ++stats.num_arena_extensions;
    ++stats.num_arena_extensions_total;
    return true;
  }

  // Expandable growth: exactly what the free tail lacks, rounded to the granularity, at the
  // end of the range. Refusals say whether the reservation, max_mem or the source ran out.
  bool ExtendExpandable(std::size_t needed, std::size_t alignment, bool use_tail,
                        ArenaFailure& failure) MEMARENA_REQUIRES(mutex) {
    std::size_t tail = use_tail ? FreeTailBytes(alignment) : 0;
    if (tail >= needed) tail = 0;
    const std::size_t granule = space->granularity();
    const std::size_t grow = (needed - tail + granule - 1) / granule * granule;
    const std::uintptr_t tail_begin = last_piece_end - tail;
    const std::size_t tail_holes = tail == 0 ? 0 : space->HolesIn(tail_begin, last_piece_end);
    if (!MakeRoom(grow + tail_holes, stats.bytes_in_use + needed, tail_begin, last_piece_end,
                  failure)) {
      return false;
    }
    void* p = ReserveOnce(grow);
    if (p == nullptr && space->DecommitFree(store, Settled(), tail_begin, last_piece_end, kUnlimited) > 0) {
      p = ReserveOnce(grow);
    }
    if (p == nullptr) {
      const VirtualMemoryStats v = static_cast<VirtualMemorySource&>(*source).VirtualStats();
      failure.kind = v.reserved_bytes - v.used_bytes < grow ? FailureKind::kReservation
                                                              : FailureKind::kSource;
      failure.attempts = 1;
      failure.first_try = failure.last_try = grow;
      failure.available = v.reserved_bytes - v.used_bytes;
      failure.capacity = source->Capacity();
      return false;
    }
    store.AddPiece(reinterpret_cast<std::uintptr_t>(p), grow, /*merge=*/true, /*pinned=*/false);
    PoisonFree(reinterpret_cast<std::uintptr_t>(p), grow);
    last_piece_end = reinterpret_cast<std::uintptr_t>(p) + grow;
    stats.OnHold(grow);
    ++stats.num_arena_extensions;
    return true;
  }

  void Free(ChunkHandle h, StreamHandle stream) MEMARENA_REQUIRES(mutex) {
    Chunk& c = store.at(h);
    in_use.Erase(c.addr);
    stats.OnFree(c.size, c.requested);
    c.in_use = false;
    c.requested = 0;
    c.stream = stream;
    c.fence = stream != 0 ? fence->Record(stream) : 0;
    PoisonFree(c.addr, c.size);
    store.InsertFree(store.Coalesce(h));
    // Best effort: keep bookkeeping in reserve for the next request (and for the next free,
    // which otherwise leaves its chunk out of the bins when operator new fails).
    store.ReserveMetadata();
    if (space) DecommitExcess();
  }

  // Expandable, after a free: the decommit rule (DecommitPolicy) costs a counter per free;
  // at an epoch's end granules go back, from the end of the range first. Best effort: when
  // the run list cannot be allocated, the next epoch retries.
  void DecommitExcess() noexcept MEMARENA_REQUIRES(mutex) {
    const std::size_t want = decommit.ExcessAfterFree(stats.bytes_held, stats.bytes_in_use);
    if (want == 0) return;
    try {
      space->DecommitFree(store, Settled(), 0, 0, want);
    } catch (const std::bad_alloc&) {
    }
  }

  // The store's invariants (chunk_store.h), then the counters against the chunks:
  //   stats.bytes_in_use == sum of size over in-use chunks
  //   stats.bytes_requested == sum of requested over in-use chunks
  //   in_use maps the address of every in-use chunk to it
  //   stats.bytes_held == sum of region sizes (not expandable: there held is committed)
  const char* CheckInvariants() const MEMARENA_REQUIRES(mutex) {
    if (const char* problem = store.CheckInvariants()) return problem;
    std::size_t in_use_bytes = 0;
    std::size_t requested_bytes = 0;
    std::size_t region_bytes = 0;
    for (const auto& [base, region] : store.regions()) {
      region_bytes += region.size;
      for (ChunkHandle h = region.head; h != kInvalidChunk; h = store.at(h).next) {
        const Chunk& c = store.at(h);
        if (!c.in_use) continue;
        if (in_use.Find(c.addr) != h) return "an in-use chunk is missing from the address map";
        in_use_bytes += c.size;
        requested_bytes += c.requested;
      }
    }
    if (in_use_bytes != stats.bytes_in_use) return "bytes in use differ from the in-use chunks";
    if (requested_bytes != stats.bytes_requested) {
      return "bytes requested differ from the in-use chunks";
    }
    if (!space && region_bytes != stats.bytes_held) return "bytes held differ from the regions";
    return nullptr;
  }

  ChunkHandle Lookup(const void* ptr) const MEMARENA_REQUIRES(mutex) {
    return in_use.Find(reinterpret_cast<std::uintptr_t>(ptr));
  }

  AllocatorStats Snapshot() const MEMARENA_REQUIRES(mutex) {
    AllocatorStats s = stats;
    s.limit_bytes = config.max_mem;
    s.largest_free_block = space ? space->LargestCommittedFree(store) : store.LargestFree();
    const std::size_t free_bytes = s.bytes_held - s.bytes_in_use;
    s.fragmentation = free_bytes == 0 ? 0.0
                                      : 1.0 - static_cast<double>(s.largest_free_block) /
                                                  static_cast<double>(free_bytes);
    if (space) {
      space->FillStats(s);
      s.bytes_releasable = space->Decommittable(store, Settled());
      return s;
    }
    for (const auto& [base, region] : store.regions()) {
      if (!region.pinned && FullyFree(region)) s.bytes_releasable += region.size;
    }
    return s;
  }
};

BfcArena::BfcArena(std::shared_ptr<MemorySource> source, ArenaConfig config,
                   std::shared_ptr<StreamFence> fence) {
  if (source == nullptr) throw std::invalid_argument("BfcArena: the memory source is null");
  config.Validate();
  impl_ = std::make_unique<Impl>(std::move(source), config, std::move(fence));
  common::RegisterReleasable(this);
}

BfcArena::~BfcArena() {
  common::UnregisterReleasable(this);
  for (const auto& [base, region] : impl_->store.regions()) {
    for (const arena::Piece& p : region.pieces) {
      impl_->UnpoisonForUse(p.addr, p.size);
      impl_->source->Release(reinterpret_cast<void*>(p.addr), p.size);
    }
  }
}

void* BfcArena::DoAllocate(std::size_t bytes, std::size_t alignment,
                           StreamHandle stream) noexcept {
  Impl& m = *impl_;
  ArenaFailure failure{this, bytes, alignment};
  arena::WatermarkWatch watch(m.watermarks, m.stats, m.config.max_mem, m.name);
  common::MutexLock lock(m.mutex);
  const arena::WatermarkWatch::Reading reading(watch);
  if (m.fence == nullptr) stream = 0;
  if (bytes > kUnlimited / 4 || alignment > kUnlimited / 4) {
    failure.kind = FailureKind::kTooLarge;
  } else {
    const std::size_t rounded = arena::RoundedBytes(bytes);
    // What this request may need of the bookkeeping is allocated first: past this point
    // nothing allocates, so a refused operator new is a counted OOM, not std::terminate.
    // Without a full reserve a free chunk may still be taken, but the arena does not grow.
    const bool reserved = m.store.ReserveMetadata();
    const bool map_ready = m.in_use.ReserveOneMore();
    failure.needed = rounded + m.AlignmentSlack(alignment);
    if (map_ready && (reserved || m.store.CanTakeWithoutAllocating())) {
      if (void* p = m.FindAndTake(rounded, bytes, alignment, stream, failure)) return p;
    }
    // Neighbours freed on other streams whose work has completed merge now: try once more.
    if (map_ready && reserved && failure.kind == FailureKind::kNone) {
      m.SettleCompletedFrees();
      if (void* p = m.FindAndTake(rounded, bytes, alignment, stream, failure)) return p;
    }
    if (!reserved || !map_ready) {
      failure.kind = FailureKind::kMetadata;
      m.stats.OnFailure();
      arena::ThreadLastFailure() = failure;
      return nullptr;
    }
    // A tail-sized extension that did not land next to the tail is followed by a full one.
    for (bool use_tail : {true, false}) {
      if (failure.kind != FailureKind::kNone) break;
      if (!m.Extend(failure.needed, alignment, use_tail, failure)) break;
      if (void* p = m.FindAndTake(rounded, bytes, alignment, stream, failure)) return p;
    }
  }
  m.stats.OnFailure();
  arena::ThreadLastFailure() = failure;
  return nullptr;
}

FreeResult BfcArena::DoDeallocate(void* ptr, StreamHandle stream) noexcept {
  Impl& m = *impl_;
  arena::WatermarkWatch watch(m.watermarks, m.stats, m.config.max_mem, m.name);
  common::MutexLock lock(m.mutex);
  const arena::WatermarkWatch::Reading reading(watch);
  const ChunkHandle h = m.Lookup(ptr);
  if (h == kInvalidChunk) return FreeResult::kNotOwned;
  if (m.fence == nullptr) {
    stream = 0;
  } else if (stream == kAllocationStream) {
    stream = m.store.at(h).stream;
  }
  m.Free(h, stream);
  return FreeResult::kFreed;
}

std::size_t BfcArena::DoUsableSize(const void* ptr) const noexcept {
  common::MutexLock lock(impl_->mutex);
  const ChunkHandle h = impl_->Lookup(ptr);
  return h == kInvalidChunk ? 0 : impl_->store.at(h).size;
}

std::size_t BfcArena::RequestedSize(const void* ptr) const noexcept {
  if (ptr == nullptr) return 0;
  common::MutexLock lock(impl_->mutex);
  const ChunkHandle h = impl_->Lookup(ptr);
  return h == kInvalidChunk ? 0 : impl_->store.at(h).requested;
}

const char* BfcArena::CheckInvariants() const noexcept {
  common::MutexLock lock(impl_->mutex);
  return impl_->CheckInvariants();
}

AllocatorStats BfcArena::DoGetStats() const {
  common::MutexLock lock(impl_->mutex);
  return impl_->Snapshot();
}

void BfcArena::ResetPeakStats() {
  common::MutexLock lock(impl_->mutex);
  impl_->stats.ResetPeaks();
}

void BfcArena::SetWatermarks(std::vector<double> levels, WatermarkCallback callback,
                             double hysteresis) {
  Impl& m = *impl_;
  m.watermarks.Set(fmt::format("{}::SetWatermarks", m.name), std::move(levels),
                   std::move(callback), hysteresis);
  // A level already crossed fires now: a watch that sees held "move" from 0.
  arena::WatermarkWatch watch(m.watermarks, m.stats, m.config.max_mem, m.name);
  common::MutexLock lock(m.mutex);
  const arena::WatermarkWatch::Reading reading(watch);
  watch.ForgetStart();
}

std::size_t BfcArena::ReleaseUnusedSpans() { return impl_->Release(/*include_pinned=*/false); }

std::size_t BfcArena::ReleaseAllUnusedRegions() { return impl_->Release(/*include_pinned=*/true); }

AllocatorKind BfcArena::kind() const noexcept { return impl_->source->kind(); }

std::string_view BfcArena::name() const noexcept { return impl_->name; }

std::vector<ArenaSegment> BfcArena::Segments() const {
  common::MutexLock lock(impl_->mutex);
  std::vector<ArenaSegment> segments;
  for (const auto& [base, region] : impl_->store.regions()) {
    ArenaSegment& segment = segments.emplace_back(ArenaSegment{base, region.size, {}});
    for (ChunkHandle h = region.head; h != kInvalidChunk; h = impl_->store.at(h).next) {
      const Chunk& c = impl_->store.at(h);
      const std::size_t holes = impl_->space ? impl_->space->HolesIn(c.addr, c.addr + c.size) : 0;
      segment.blocks.push_back({c.addr - base, c.size, c.in_use, c.requested,
                                c.size - std::min(c.size, holes)});
    }
  }
  return segments;
}

const ArenaConfig& BfcArena::config() const noexcept { return impl_->config; }

MemorySource& BfcArena::source() const noexcept { return *impl_->source; }

std::string BfcArena::DescribeFailure(std::size_t bytes, std::size_t alignment) const {
  ArenaFailure failure = arena::ThreadLastFailure();
  if (failure.arena != this || failure.bytes != bytes || failure.alignment != alignment) {
    failure = ArenaFailure{this, bytes, alignment};
  }
  const AllocatorStats stats = GetStats();
  return common::OutOfMemoryMessage(name(), bytes, alignment, stats,
                                    arena::FailureReason(failure, impl_->config, stats, impl_->source->name()),
                                    arena::FailureAdvice(failure, stats));
}

}  // namespace memarena
