// Stats tables and the out-of-memory diagnostic, rendered with fmt.
#include "common/format.h"

#include <fmt/format.h>

#include <iterator>

#include "memarena/stats.h"
#include "platform/os.h"

namespace memarena {

namespace {

// A limit: "unlimited" for 0, else its byte count.
struct LimitCount {
  std::size_t bytes;
};

}  // namespace
}  // namespace memarena

fmt::format_context::iterator fmt::formatter<memarena::common::ByteCount>::format(
    memarena::common::ByteCount count, format_context& ctx) const {
  // Up to EiB: a size_t reaches 16 EiB (a request computed from a bad size, say).
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(count.bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format_to(ctx.out(), "{} B", count.bytes);
  return fmt::format_to(ctx.out(), "{:.2f} {}", value, kUnits[unit]);
}

template <>
struct fmt::formatter<memarena::LimitCount> {
  constexpr auto parse(format_parse_context& ctx) { return ctx.begin(); }
  format_context::iterator format(memarena::LimitCount limit, format_context& ctx) const {
    if (limit.bytes == 0) return fmt::format_to(ctx.out(), "unlimited");
    return fmt::format_to(ctx.out(), "{}", memarena::common::ByteCount{limit.bytes});
  }
};

namespace memarena {

std::string FormatBytes(std::size_t bytes) { return fmt::format("{}", common::ByteCount{bytes}); }

namespace {
std::string LimitText(std::size_t limit) { return fmt::format("{}", LimitCount{limit}); }
}  // namespace

namespace {

double Millis(std::uint64_t nanos) { return static_cast<double>(nanos) / 1e6; }

// The host's transparent huge pages: whether they are asked for, and if not, why; a user who
// sees page faults or RSS move between runs looks here first (docs/host.md, "Statistics").
std::string HugePagesLine(const AllocatorStats& s) {
  if (s.huge_page_size == 0) {
    return "  huge pages: none (transparent huge pages are off or absent in this kernel)\n";
  }
  const std::string advised =
      fmt::format("{} large blocks and {} whole huge pages advised", s.huge_page_blocks,
                  s.huge_pages_committed);
  if (!s.huge_pages_enabled) {
    return fmt::format("  huge pages: off (huge_pages:0); {}\n", advised);
  }
  if (s.huge_page_slow_fault_nanos != 0) {
    return fmt::format(
        "  huge pages: switched off as slow: a first write fault of {:.2f} ms, the second "
        "above {:.2f} ms (this machine's bound, at least what one huge page's bytes cost in "
        "base-page faults) before fast ones made up for the first; {} before; base pages "
        "from then on (huge_pages:0 skips the trial)\n",
        Millis(s.huge_page_slow_fault_nanos), Millis(s.huge_page_fault_bound_nanos), advised);
  }
  return fmt::format("  huge pages ({}): on; {}; a first write fault above {:.2f} ms counts as slow\n",
                     FormatBytes(s.huge_page_size), advised, Millis(s.huge_page_fault_bound_nanos));
}

// Where the free spans' bytes lie by span length, as tcmalloc's page heap lists them: many
// short spans beside a short longest one is fragmentation. Empty without free spans.
std::string FreeSpansLine(const AllocatorStats& s) {
  std::string out;
  for (std::size_t b = 0; b < kFreeSpanBuckets; ++b) {
    const FreeSpanCount& c = s.free_spans_by_length[b];
    if (c.spans == 0) continue;
    const std::size_t low = kFreeSpanBucketBase << b;
    const std::size_t high = 2 * low - kFreeSpanBucketBase;  // whole pages
    std::string range = FormatBytes(low);
    if (b + 1 == kFreeSpanBuckets) {
      range += " and up";
    } else if (high != low) {
      range += fmt::format(" to {}", FormatBytes(high));
    }
    out += fmt::format("{}{} x{} ({})", out.empty() ? "" : ", ", range, c.spans,
                       FormatBytes(c.bytes));
  }
  return out.empty() ? out : fmt::format("  free spans by length: {}\n", out);
}

// The summary tcmalloc and jemalloc put first: whose numbers these are, what the process
// holds, and where the held bytes that are not in use sit.
std::string StatsSummary(const AllocatorStats& s) {
  char command[256];
  platform::ProcessCommandLine(command, sizeof command);
  std::string out = fmt::format("  pid {}  command: {}\n", platform::ProcessId(), command);
  out += fmt::format("  RSS {}; in use {} of held {} (limit {})\n",
                     FormatBytes(platform::ResidentBytes()), FormatBytes(s.bytes_in_use),
                     FormatBytes(s.bytes_held), LimitText(s.limit_bytes));
  if (s.bytes_metadata != 0) {  // only the host fills these
    const std::size_t accounted = s.bytes_in_use + s.bytes_in_thread_caches +
                                  s.bytes_in_central_lists + s.bytes_releasable;
    const std::size_t other = s.bytes_held > accounted ? s.bytes_held - accounted : 0;
    out += fmt::format(
        "  held not in use: thread caches {}, central lists {} ({} never carved), free spans {}, "
        "unused span tails {}; metadata {} (outside held)\n",
        FormatBytes(s.bytes_in_thread_caches), FormatBytes(s.bytes_in_central_lists),
        FormatBytes(s.bytes_uncarved),
        FormatBytes(s.bytes_releasable), FormatBytes(other), FormatBytes(s.bytes_metadata));
    out += FreeSpansLine(s);
    if (s.bytes_moved != 0) {
      out += fmt::format("  moved {} of free pages into growing spans instead of faulting them\n",
                         FormatBytes(s.bytes_moved));
    }
    out += HugePagesLine(s);
  }
  return out;
}

}  // namespace

std::string FormatStats(const AllocatorStats& s, std::string_view allocator_name,
                        std::span<const SizeClassStats> size_classes) {
  std::string out = fmt::format("memarena stats: {}\n", allocator_name);
  out += StatsSummary(s);
  out += "  detail:\n";
  auto row = [&out](std::string_view label, const std::string& now, const std::string& peak) {
    out += fmt::format("  {:<22} {:>14} {:>14}\n", label, now, peak);
  };
  row("", "current", "peak");
  row("in use", FormatBytes(s.bytes_in_use), FormatBytes(s.peak_bytes_in_use));
  row("requested", FormatBytes(s.bytes_requested), FormatBytes(s.peak_bytes_requested));
  row("held", FormatBytes(s.bytes_held), FormatBytes(s.peak_bytes_held));
  row("releasable", FormatBytes(s.bytes_releasable), "");
  row("largest free block", FormatBytes(s.largest_free_block), "");
  row("limit", LimitText(s.limit_bytes), "");
  row("fragmentation", fmt::format("{:.1f}%", s.fragmentation * 100.0), "");
  out += fmt::format(
      "  allocs {}  frees {}  reserves {}  releases {}  released {}  ooms {}\n", s.num_allocs,
      s.num_frees, s.num_reserves, s.num_releases, FormatBytes(s.bytes_released), s.num_ooms);
  if (s.num_arena_extensions != 0 || s.num_arena_shrinkages != 0) {
    out += fmt::format("  arena extensions {}  shrinkages {}  max alloc {}\n",
                       s.num_arena_extensions, s.num_arena_shrinkages,
                       FormatBytes(s.max_alloc_size));
  }
  if (s.virtual_bytes_reserved != 0) {
    out += fmt::format("  virtual reserved {}  spanned {}  commits {}  decommits {} ({})\n",
                       FormatBytes(s.virtual_bytes_reserved), FormatBytes(s.virtual_bytes_used),
                       s.num_commits, s.num_decommits, FormatBytes(s.bytes_decommitted));
  }
  if (!size_classes.empty()) {
    // The last two columns split the caches of held-not-in-use by class: a class's free
    // objects serve its own requests only (and, from 4 KiB up, the four classes below).
    out += fmt::format("  {:>10} {:>12} {:>12} {:>14} {:>14} {:>14} {:>14}\n", "class",
                       "allocs", "frees", "in use", "thread caches", "central lists",
                       "never carved");
    for (const SizeClassStats& c : size_classes) {
      if (c.num_allocs == 0) continue;
      out += fmt::format("  {:>10} {:>12} {:>12} {:>14} {:>14} {:>14} {:>14}\n", c.size,
                         c.num_allocs, c.num_frees, FormatBytes(c.bytes_in_use),
                         FormatBytes(c.bytes_in_thread_caches),
                         FormatBytes(c.bytes_in_central_lists), FormatBytes(c.bytes_uncarved));
    }
  }
  return out;
}

namespace common {
namespace {

// The one format of both forms below; `limit` caps what is written (format_to_n's n).
template <typename Out>
fmt::format_to_n_result<Out> FormatOutOfMemoryMessage(
    Out out, std::size_t limit, std::string_view allocator_name, std::size_t requested,
    std::size_t alignment, const AllocatorStats& s, std::string_view reason,
    std::string_view advice) {
  return fmt::format_to_n(
      out, limit,
      "memarena: {} could not allocate {} (alignment {}): {}; in use {}, requested {}, held {}, "
      "limit {}, releasable {}, largest free block {}, fragmentation {:.1f}%. {}",
      allocator_name, ByteCount{requested}, alignment, reason, ByteCount{s.bytes_in_use},
      ByteCount{s.bytes_requested}, ByteCount{s.bytes_held}, LimitCount{s.limit_bytes},
      ByteCount{s.bytes_releasable}, ByteCount{s.largest_free_block}, s.fragmentation * 100.0,
      advice);
}

}  // namespace

std::string OutOfMemoryMessage(std::string_view allocator_name, std::size_t requested,
                               std::size_t alignment, const AllocatorStats& s,
                               std::string_view reason, std::string_view advice) {
  std::string text;
  FormatOutOfMemoryMessage(std::back_inserter(text), text.max_size(), allocator_name, requested,
                           alignment, s, reason, advice);
  return text;
}

std::string_view WriteOutOfMemoryMessage(std::span<char> out, std::string_view allocator_name,
                                         std::size_t requested, std::size_t alignment,
                                         const AllocatorStats& s, std::string_view reason,
                                         std::string_view advice) noexcept {
  if (out.empty()) return {};
  const auto written = FormatOutOfMemoryMessage(out.data(), out.size() - 1, allocator_name,
                                                requested, alignment, s, reason, advice);
  const auto length = static_cast<std::size_t>(written.out - out.data());
  out[length] = '\0';
  return {out.data(), length};
}

}  // namespace common

}  // namespace memarena
