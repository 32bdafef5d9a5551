// glibc's heap introspection, answered from the host allocator: mallinfo2, mallinfo,
// malloc_stats and malloc_info. Without these a preloaded program (or a tool inside it that
// logs mallinfo2().uordblks) reads glibc's own heap, which the drop-in leaves unused: zeros.
// Cold and off every allocation path; each takes the statistics' locks, as Stats() does.
#pragma once

#include <malloc.h>

#include <cstdio>
#include <string>

namespace memarena::dropin {

// The fields glibc documents (mallinfo(3)), from memarena's statistics:
//   arena    = bytes held (every byte the heap took from the OS and still holds)
//   uordblks = bytes in use;  fordblks = arena - uordblks (held, not in use)
//   fsmblks  = free objects in the thread caches and the central lists (part of fordblks)
//   keepcost = free spans that malloc_trim would return now (part of fordblks)
//   ordblks, smblks, hblks, hblkhd, usmblks = 0: the heap has no chunk bins and no blocks
//   mapped apart from held, and glibc documents usmblks as always 0.
struct mallinfo2 MallInfo2() noexcept;
// mallinfo's int fields saturate at INT_MAX where glibc's wrap.
struct mallinfo MallInfo() noexcept;
// The stats text that stats_at_exit prints: the summary and the current/peak table, then
// with stats_detail:1 one row per size class used. Allocates; throws what fmt throws.
std::string StatsText();
// StatsText(), now, on stderr (glibc prints its arenas' totals there).
void MallocStats() noexcept;
// An XML document on `stream`: glibc's <system> and <aspace> totals, with memarena's
// figures as <total> rows. Returns 0; -1 with errno EINVAL for options other than 0 (glibc
// defines none) or a null stream, or -1 when the stream fails.
int MallocInfo(int options, std::FILE* stream) noexcept;

}  // namespace memarena::dropin
