// "Who holds this memory": the report sections that break a trace's memory down by block
// rather than over time: a histogram of allocation sizes and the largest live blocks at the
// trace's peak (after PyTorch's memory_viz).
#pragma once

#include <cstddef>
#include <span>

#include "html_report.h"
#include "memarena/tracing.h"

namespace memarena::tools {

// The row (index into the trace) where the live requested bytes first reach their peak, and
// that peak; {0, 0} for a trace without allocations.
struct LivePeak {
  std::size_t event = 0;
  std::size_t bytes = 0;
};
LivePeak FindLivePeak(std::span<const TraceEvent> trace);

// Appends both sections for `trace` (allocations and frees in file order) to `html`.
void AddMemoryHolders(HtmlReport& html, std::span<const TraceEvent> trace);

}  // namespace memarena::tools
