// The segment map of a report: a BFC arena replayed to the trace's peak, then each of its
// regions drawn as a bar of chunks (in use, free, decommitted) and listed in a table.
#include "segment_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "memarena/arena.h"
#include "memarena/stats.h"
#include "memory_holders.h"
#include "replay_target.h"
#include "svg.h"

namespace memarena::tools {
namespace {

// More regions than this (kSameAsRequested may make hundreds) are summed in the table's last
// row and left out of the picture, which would be unreadable anyway.
constexpr std::size_t kMaxSegmentsShown = 64;
constexpr double kLabelWidth = 150;
constexpr double kBarWidth = 800;
constexpr double kRowHeight = 26;
constexpr double kBarHeight = 18;
constexpr std::string_view kInUseColor = "#4e79a7";
constexpr std::string_view kFreeColor = "#f6c28b";
constexpr std::string_view kDecommittedColor = "#ffffff";

// One row of the table: the segments' summed sizes and blocks (the largest free block is the
// largest of any of them), so a row can stand for one segment or for many.
std::vector<std::string> TotalsRow(std::string name, std::span<const ArenaSegment> segments) {
  std::size_t size = 0, in_use = 0, free_committed = 0, decommitted = 0, largest_free = 0;
  std::size_t blocks_in_use = 0;
  for (const ArenaSegment& s : segments) {
    size += s.size;
    for (const ArenaBlock& b : s.blocks) {
      if (b.in_use) {
        in_use += b.size;
        ++blocks_in_use;
      } else {
        free_committed += b.committed;
        decommitted += b.size - b.committed;
        largest_free = std::max(largest_free, b.committed);
      }
    }
  }
  return {std::move(name),           FormatBytes(size),        FormatBytes(in_use),
          FormatBytes(free_committed), FormatBytes(decommitted),
          std::to_string(blocks_in_use), FormatBytes(largest_free)};
}

// One bar per segment, all on one scale (the largest segment fills the width), so that sizes
// compare across rows as in memory_viz.
std::string RenderSegments(std::span<const ArenaSegment> segments) {
  std::size_t largest = 1;
  for (const ArenaSegment& s : segments) largest = std::max(largest, s.size);
  const double scale = kBarWidth / static_cast<double>(largest);
  const double legend = 24;
  SvgWriter svg(kLabelWidth + kBarWidth + 10,
                legend + kRowHeight * static_cast<double>(segments.size()) + 6);
  double x = kLabelWidth;
  for (const auto& [color, label] : {std::pair{kInUseColor, "in use"},
                                     {kFreeColor, "free (committed)"},
                                     {kDecommittedColor, "decommitted"}}) {
    svg.Rect(x, 6, 12, 12, color, "#555");
    svg.Text(x + 16, 16, label, 11);
    x += 140;
  }
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const ArenaSegment& s = segments[i];
    const double y = legend + kRowHeight * static_cast<double>(i);
    svg.Text(kLabelWidth - 8, y + 13, fmt::format("{}: {}", i + 1, FormatBytes(s.size)), 11, "end");
    for (const ArenaBlock& b : s.blocks) {
      const double bx = kLabelWidth + static_cast<double>(b.offset) * scale;
      const double bw = static_cast<double>(b.size) * scale;
      if (b.in_use) {
        svg.Rect(bx, y, std::max(0.3, bw), kBarHeight, kInUseColor, "#ffffff",
                 fmt::format("in use: {} (asked {}) at offset {}", FormatBytes(b.size),
                             FormatBytes(b.requested), b.offset));
        continue;
      }
      // Where inside a free chunk its holes lie is not reported; the committed share is
      // drawn first.
      const double committed_w = static_cast<double>(b.committed) * scale;
      const std::string tooltip =
          fmt::format("free: {} at offset {}, {} of it decommitted", FormatBytes(b.size), b.offset,
                      FormatBytes(b.size - b.committed));
      if (b.committed != b.size) {
        svg.Rect(bx, y, std::max(0.3, bw), kBarHeight, kDecommittedColor, "#999", tooltip);
      }
      if (b.committed != 0) {
        svg.Rect(bx, y, std::max(0.3, committed_w), kBarHeight, kFreeColor, "#999", tooltip);
      }
    }
  }
  return svg.Finish();
}

// Runs the trace's rows [0, last] through `arena`; what they leave live stays allocated (in
// `live`, and in `leaked` for a pointer the trace allocated again without freeing it, as
// Replay does). Returns how many allocations the arena refused.
std::size_t ReplayUpTo(std::span<const TraceEvent> trace, std::size_t last, Allocator& arena,
                       std::unordered_map<std::uintptr_t, void*>& live, std::vector<void*>& leaked) {
  std::size_t refused = 0;
  for (std::size_t i = 0; i <= last && i < trace.size(); ++i) {
    const TraceEvent& r = trace[i];
    if (r.action == TraceAction::kAllocate) {
      void* p = arena.TryAllocate(r.size);
      if (p == nullptr) {
        ++refused;
        continue;
      }
      void*& slot = live[r.pointer];
      if (slot != nullptr) leaked.push_back(slot);
      slot = p;
    } else if (r.action == TraceAction::kFree) {
      if (const auto it = live.find(r.pointer); it != live.end()) {
        arena.Deallocate(it->second);
        live.erase(it);
      }
    }
  }
  return refused;
}

}  // namespace

void AddSegmentMap(HtmlReport& html, std::span<const TraceEvent> trace,
                   std::string_view allocator, std::string_view config) {
  // Only an arena lists its regions; building another target here would also disturb the
  // process-wide host allocator for nothing.
  if (allocator != "bfc") {
    html.Heading("Who holds this memory: segments at the peak");
    html.Paragraph(fmt::format("The segment map is drawn for BFC arenas (--allocator bfc), which "
                               "list their regions and chunks; {} does not.",
                               allocator));
    return;
  }
  const std::unique_ptr<ReplayTarget> target = MakeTarget(allocator, config);
  auto& arena = dynamic_cast<BfcArena&>(target->allocator());
  html.Heading(fmt::format("Who holds this memory: segments at the peak, {}", target->label()));
  const LivePeak peak = FindLivePeak(trace);
  std::unordered_map<std::uintptr_t, void*> live;
  std::vector<void*> leaked;
  const std::size_t refused = ReplayUpTo(trace, peak.event, arena, live, leaked);
  std::vector<ArenaSegment> segments = arena.Segments();
  for (const auto& [recorded, p] : live) arena.Deallocate(p);
  for (void* p : leaked) arena.Deallocate(p);

  // Largest first: where mmap placed each region says nothing, and the order stays the same
  // from one run to the next.
  std::stable_sort(segments.begin(), segments.end(),
                   [](const ArenaSegment& a, const ArenaSegment& b) { return a.size > b.size; });
  html.Paragraph(fmt::format(
      "The arena replayed to row {}, where the trace's live requested bytes peak at {}{}: each "
      "region it holds there (largest first), its chunks in address order.",
      peak.event + 1, FormatBytes(peak.bytes),
      refused == 0 ? std::string() : fmt::format(" ({} allocations refused on the way)", refused)));
  const std::span<const ArenaSegment> shown(segments.data(),
                                            std::min(segments.size(), kMaxSegmentsShown));
  html.Svg(RenderSegments(shown));
  const std::span<const ArenaSegment> all(segments);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    rows.push_back(TotalsRow(std::to_string(i + 1), all.subspan(i, 1)));
  }
  if (segments.size() > shown.size()) {
    rows.push_back(TotalsRow(fmt::format("{} more", segments.size() - shown.size()),
                             all.subspan(shown.size())));
  }
  rows.push_back(TotalsRow(fmt::format("all {}", segments.size()), all));
  html.Table({"segment", "size", "in use", "free (committed)", "decommitted", "blocks in use",
              "largest free"},
             rows);
}

}  // namespace memarena::tools
