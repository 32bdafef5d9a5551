// The size histogram and the largest live blocks at the peak of a trace.
#include "memory_holders.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <string>
#include <unordered_map>
#include <vector>

#include "memarena/stats.h"

namespace memarena::tools {
namespace {

constexpr std::size_t kLargestShown = 10;
constexpr int kBarWidth = 40;

struct LiveBlock {
  std::size_t size = 0;
  std::size_t event = 0;  // the row that allocated it
  std::uint64_t thread = 0;
};

// Power-of-two buckets: [2^k, 2^(k+1)); bucket 0 also holds zero-byte requests.
void AddSizeHistogram(HtmlReport& html, std::span<const TraceEvent> trace) {
  std::array<std::size_t, 65> count{};
  std::array<std::size_t, 65> bytes{};
  std::size_t total_bytes = 0;
  for (const TraceEvent& r : trace) {
    if (r.action != TraceAction::kAllocate) continue;
    const std::size_t bucket = r.size == 0 ? 0 : std::bit_width(r.size) - 1;
    ++count[bucket];
    bytes[bucket] += r.size;
    total_bytes += r.size;
  }
  html.Heading("Who holds this memory: allocation sizes");
  html.Paragraph("Every allocation of the trace by size (powers of two); the bar is the share of "
                 "all bytes allocated.");
  std::vector<std::vector<std::string>> rows;
  for (std::size_t b = 0; b < count.size(); ++b) {
    if (count[b] == 0) continue;
    const double share = total_bytes == 0 ? 0.0
                                          : static_cast<double>(bytes[b]) /
                                                static_cast<double>(total_bytes);
    const std::size_t low = std::size_t{1} << b;
    rows.push_back({fmt::format("{} - {}", FormatBytes(b == 0 ? 0 : low),
                                FormatBytes(b >= 63 ? SIZE_MAX : (low << 1) - 1)),
                    std::to_string(count[b]), FormatBytes(bytes[b]),
                    fmt::format("{:.1f}%", share * 100.0),
                    std::string(static_cast<std::size_t>(share * kBarWidth + 0.5), '#')});
  }
  html.Table({"size", "allocations", "bytes", "share", ""}, rows);
}

// Lists the largest blocks alive at the row where live requested bytes peak.
void AddLargestAtPeak(HtmlReport& html, std::span<const TraceEvent> trace) {
  const LivePeak peak = FindLivePeak(trace);
  const std::size_t peak_event = peak.event;
  const std::size_t peak_bytes = peak.bytes;
  std::unordered_map<std::uintptr_t, LiveBlock> live;
  for (std::size_t i = 0; i <= peak_event && i < trace.size(); ++i) {
    const TraceEvent& r = trace[i];
    if (r.action == TraceAction::kAllocate) live[r.pointer] = {r.size, i, r.thread};
    if (r.action == TraceAction::kFree) live.erase(r.pointer);
  }
  std::vector<LiveBlock> blocks;
  blocks.reserve(live.size());
  for (const auto& [pointer, block] : live) blocks.push_back(block);
  std::sort(blocks.begin(), blocks.end(), [](const LiveBlock& a, const LiveBlock& b) {
    return a.size != b.size ? a.size > b.size : a.event < b.event;
  });
  html.Heading("Who holds this memory: the largest live blocks at the peak");
  html.Paragraph(fmt::format("At row {} the trace's live requested bytes peak at {} in {} "
                             "blocks; the {} largest of them:",
                             peak_event + 1, FormatBytes(peak_bytes), blocks.size(),
                             std::min(blocks.size(), kLargestShown)));
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < blocks.size() && i < kLargestShown; ++i) {
    const LiveBlock& b = blocks[i];
    rows.push_back({FormatBytes(b.size),
                    fmt::format("{:.1f}%", peak_bytes == 0 ? 0.0
                                                           : 100.0 * static_cast<double>(b.size) /
                                                                 static_cast<double>(peak_bytes)),
                    std::to_string(b.event + 1), std::to_string(b.thread)});
  }
  html.Table({"size", "share of the peak", "allocated at row", "thread"}, rows);
}

}  // namespace

LivePeak FindLivePeak(std::span<const TraceEvent> trace) {
  std::unordered_map<std::uintptr_t, std::size_t> live;  // recorded pointer -> size
  std::size_t live_bytes = 0;
  LivePeak peak;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceEvent& r = trace[i];
    if (r.action == TraceAction::kAllocate) {
      live[r.pointer] = r.size;
      live_bytes += r.size;
      if (live_bytes > peak.bytes) peak = {i, live_bytes};
    } else if (r.action == TraceAction::kFree) {
      if (const auto it = live.find(r.pointer); it != live.end()) {
        live_bytes -= it->second;
        live.erase(it);
      }
    }
  }
  return peak;
}

void AddMemoryHolders(HtmlReport& html, std::span<const TraceEvent> trace) {
  AddSizeHistogram(html, trace);
  AddLargestAtPeak(html, trace);
}

}  // namespace memarena::tools
