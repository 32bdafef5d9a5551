// "Who holds this memory": the memory map of a report, each region of a BFC arena at the
// trace's peak drawn as a bar of its used, free and decommitted parts (after the segment view
// of PyTorch's memory_viz).
#pragma once

#include <span>
#include <string_view>

#include "html_report.h"
#include "memarena/tracing.h"

namespace memarena::tools {

// Replays `trace` up to the row where its live requested bytes peak through a fresh
// `allocator` built with `config` (as MakeTarget), and appends a picture and a table of the
// arena's segments there to `html`. Allocators that are not BFC arenas get one line saying
// that the map covers arenas only. Throws what MakeTarget throws.
void AddSegmentMap(HtmlReport& html, std::span<const TraceEvent> trace,
                   std::string_view allocator, std::string_view config);

}  // namespace memarena::tools
