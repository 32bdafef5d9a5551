// The drop-in's process state: MEMARENA_CONF read once when the library loads, the stats
// printed at exit, and the trace_file log. The allocation paths in dropin.h consult it only
// through TracingOn(), one relaxed load (one compare of memory on x86-64).
#pragma once

#include <atomic>
#include <cstddef>

#include "platform/cpu.h"
#include "platform/stack.h"

#if defined(__GNUC__)
#define MEMARENA_DROPIN_HIDDEN __attribute__((visibility("hidden")))
#define MEMARENA_DROPIN_EXPORT __attribute__((visibility("default")))
#else
#define MEMARENA_DROPIN_HIDDEN
#define MEMARENA_DROPIN_EXPORT
#endif
// An exported function that allocates. In the allocation-entry section (platform/stack.h),
// as every drop-in and heap frame that can sit under a sampled allocation is, so that a heap
// profile's stacks start at the program's call (calloc and posix_memalign keep a frame).
#define MEMARENA_DROPIN_ALLOCATING_EXPORT MEMARENA_DROPIN_EXPORT MEMARENA_ALLOCATION_ENTRY

namespace memarena::dropin {

// True while MEMARENA_CONF=trace_file:PATH is recording in this process. Set once at load,
// cleared in a forked child (whose rows would interleave with the parent's in one file).
MEMARENA_DROPIN_HIDDEN extern std::atomic<bool> g_tracing;

inline bool TracingOn() noexcept { return platform::FlagSet(g_tracing); }

// Trace rows; callable inside malloc (they never allocate). `bytes` is what was asked for.
MEMARENA_DROPIN_HIDDEN void TraceAllocate(const void* ptr, std::size_t bytes) noexcept;
MEMARENA_DROPIN_HIDDEN void TraceFree(const void* ptr) noexcept;
MEMARENA_DROPIN_HIDDEN void TraceFailure(std::size_t bytes) noexcept;

// A failed C allocation: at most one line per oom_message_interval on stderr naming the
// request (its alignment where it is not malloc's), held and the ceiling, or the heap's
// reach when no block could serve it. `count` > 1: calloc's or reallocarray's `count`
// elements of `bytes`, whose product overflows. Never allocates (the heap just failed).
MEMARENA_DROPIN_HIDDEN void ReportFailure(std::size_t bytes, std::size_t alignment,
                                          std::size_t count = 1) noexcept;

// A C allocation while tracing: host::Allocate plus its row; failure sets errno = ENOMEM.
MEMARENA_DROPIN_HIDDEN void* AllocateTraced(std::size_t bytes, std::size_t alignment) noexcept;

// Whether MEMARENA_CONF set stats_detail:1 (the per-size-class rows in the stats text).
MEMARENA_DROPIN_HIDDEN bool StatsDetailOn() noexcept;

// Applies MEMARENA_CONF once the heap works (at load): the host keys (ceiling, release
// ratio, cache size) through HostAllocator(), which reports each bad key on its own line and
// applies the valid ones, then the drop-in's keys (common::DropinConfig): exit stats,
// trace_file, the failed-malloc line and the observability outputs.
void ConfigureFromEnvironment() noexcept;

}  // namespace memarena::dropin
