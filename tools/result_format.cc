// Text, JSON and HTML-row rendering of replay results.
#include "result_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "memarena/export.h"
#include "memarena/stats.h"

namespace memarena::tools {
namespace {

std::string Rate(double ops) {
  if (ops >= 1e6) return fmt::format("{:.1f}M", ops / 1e6);
  if (ops >= 1e3) return fmt::format("{:.0f}k", ops / 1e3);
  return fmt::format("{:.0f}", ops);
}

std::size_t Releases(const ReplayResult& r) {
  return static_cast<std::size_t>(std::count_if(r.marks.begin(), r.marks.end(), [](const ReplayMark& m) {
    return m.kind == ReplayMark::Kind::kRelease;
  }));
}

}  // namespace

std::vector<std::string> ResultHeader() {
  return {"allocator", "peak in use", "peak held", "held/in use", "frag. at peak", "OOMs",
          "releases", "ops/s"};
}

std::vector<std::string> ResultRow(const ReplayResult& r) {
  const double overhead =
      r.peak_in_use == 0 ? 0.0 : static_cast<double>(r.peak_held) / static_cast<double>(r.peak_in_use);
  return {r.allocator,
          FormatBytes(r.peak_in_use),
          FormatBytes(r.peak_held),
          fmt::format("{:.2f}", overhead),
          fmt::format("{:.1f}%", r.fragmentation * 100.0),
          fmt::format("{}", r.ooms),
          fmt::format("{}", Releases(r)),
          Rate(r.ops_per_second)};
}

std::string ResultsTable(const std::vector<ReplayResult>& results) {
  std::vector<std::vector<std::string>> rows = {ResultHeader()};
  for (const auto& r : results) rows.push_back(ResultRow(r));
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      // First column left-aligned, numbers right-aligned.
      out += c == 0 ? fmt::format("{:<{}}", row[c], widths[c]) : fmt::format("  {:>{}}", row[c], widths[c]);
    }
    out += '\n';
  }
  return out;
}

std::string ResultJson(const ReplayResult& r) {
  return fmt::format(
      "{{\"allocator\":{},\"events\":{},\"allocations\":{},\"frees\":{},\"ooms\":{},"
      "\"unknown_frees\":{},\"trace_failures\":{},\"peak_in_use\":{},\"peak_requested\":{},"
      "\"peak_held\":{},\"limit_bytes\":{},\"released_bytes\":{},\"releases\":{},"
      "\"fragmentation\":{:.6f},\"seconds\":{:.6f},\"ops_per_second\":{:.0f},\"stats\":{}}}",
      JsonString(r.allocator), r.events, r.allocations, r.frees, r.ooms, r.unknown_frees, r.trace_failures,
      r.peak_in_use, r.peak_requested, r.peak_held, r.limit_bytes, r.released_bytes, Releases(r),
      r.fragmentation, r.seconds, r.ops_per_second, StatsToJson(r.final_stats, r.allocator));
}

ProgressLine::ProgressLine(std::string name, std::chrono::milliseconds delay)
    : name_(std::move(name)),
      phase_start_(std::chrono::steady_clock::now()),
      start_(phase_start_),
      delay_(delay) {}

void ProgressLine::Phase(std::string_view phase, Unit unit) {
  phase_ = std::string(phase);
  unit_ = unit;
  phase_start_ = std::chrono::steady_clock::now();
}

void ProgressLine::Update(std::size_t done, std::size_t total) {
  const auto now = std::chrono::steady_clock::now();
  if (!shown_ && now - start_ < delay_) return;
  // At most ten rewrites a second, and always the last one.
  if (shown_ && done != total && now - last_ < std::chrono::milliseconds(100)) return;
  shown_ = true;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - phase_start_).count();
  const std::string eta =
      done == 0 || done >= total
          ? std::string("      ")
          : fmt::format("ETA {:.1f} s", elapsed * static_cast<double>(total - done) /
                                            static_cast<double>(done));
  // Trailing spaces wipe what a longer previous line left behind.
  const std::string amount = unit_ == Unit::kBytes
                                 ? fmt::format("{}/{}", FormatBytes(done), FormatBytes(total))
                                 : fmt::format("{}/{} events", done, total);
  fmt::print(stderr, "\r{}: {} {:3}% ({}), {}    ", name_, phase_,
             total == 0 ? 100 : done * 100 / total, amount, eta);
  std::fflush(stderr);
}

void ProgressLine::Done() {
  if (shown_) fmt::print(stderr, "\n");
  shown_ = false;
}

}  // namespace memarena::tools
