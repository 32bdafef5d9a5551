// The process-wide host allocator: size classes, spans, per-thread caches, a ceiling on
// held bytes, and release of free spans to the OS.
#pragma once

#include <cstddef>
#include <vector>

#include "memarena/allocator.h"
#include "memarena/config.h"
#include "memarena/stats.h"

namespace memarena {

// The process-wide host allocator. Created on first use with HostConfig::FromEnvironment()
// (MEMARENA_CONF); never destroyed. Thread-safe; the small-size path takes no lock.
Allocator& HostAllocator();

// The host allocator's counters per size class, one entry per class in ascending size (the
// host has 96). Host-only, so AllocatorStats stays small for every other allocator. Folds
// per-thread counters under the registry lock like GetStats(); allocates the vector.
std::vector<SizeClassStats> HostSizeClassStats();

// Sets the ceiling on bytes the host allocator holds (0 = unlimited). Fails, returning
// false and changing nothing, when `bytes` is below what is already held after releasing
// every free span.
bool SetCeiling(std::size_t bytes);

// The current ceiling (0 = unlimited).
std::size_t Ceiling() noexcept;

// Releases free spans of the host allocator (including the calling thread's cache and the
// central lists) and of every live arena. Returns the bytes given back.
// Cost: with nothing releasable a few microseconds (a pass over the caches and free-list
// heads; spans already returned are not touched); otherwise about one madvise per free span,
// plus the page faults when the program touches those pages again. The host allocator
// keeps up to ReleaseKeep() bytes of free spans committed (largest spans go first), so a
// test suite calling this after every test keeps a warm working set.
std::size_t ReleaseUnusedSpans();

// The warm working set ReleaseUnusedSpans() leaves committed, in bytes (default 0 = release
// everything; MEMARENA_CONF key `release_keep`). Kept spans count as held, so they count
// against the ceiling; allocation under ceiling pressure still releases them.
void SetReleaseKeep(std::size_t bytes);
std::size_t ReleaseKeep() noexcept;

}  // namespace memarena
