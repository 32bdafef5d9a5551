// Stats export: one table of metrics drives the JSON and the Prometheus output, so the two
// can never disagree on a field; the PyTorch and ORT name mappings sit beside it.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "memarena/export.h"

namespace memarena {
namespace {

enum class MetricType { kGauge, kCounter };

// One exported number. `integer` or `ratio` reads it from the stats (exactly one is set).
struct Metric {
  std::string_view field;       // AllocatorStats field name, used as the JSON key
  std::string_view prometheus;  // metric name without the memarena_ prefix
  MetricType type;
  std::string_view help;
  std::uint64_t (*integer)(const AllocatorStats&);
  double (*ratio)(const AllocatorStats&);
  // An integer count of nanoseconds: JSON keeps the field's value, Prometheus gets seconds
  // (its base unit, as its _seconds name says).
  bool nanoseconds = false;
};
constexpr bool kNanoseconds = true;

#define MEMARENA_INT(f) [](const AllocatorStats& s) { return static_cast<std::uint64_t>(s.f); }, nullptr

constexpr std::array kMetrics = {
    Metric{"bytes_in_use", "bytes_in_use", MetricType::kGauge,
           "Bytes handed to callers and not yet freed, at the size reserved for them.",
           MEMARENA_INT(bytes_in_use)},
    Metric{"bytes_requested", "bytes_requested", MetricType::kGauge,
           "Sum of the sizes callers asked for, of live allocations.",
           MEMARENA_INT(bytes_requested)},
    Metric{"bytes_held", "bytes_held", MetricType::kGauge,
           "Bytes obtained from the OS or device and not yet returned (reserved).",
           MEMARENA_INT(bytes_held)},
    Metric{"bytes_releasable", "bytes_releasable", MetricType::kGauge,
           "Held bytes that ReleaseUnusedSpans() could return now.",
           MEMARENA_INT(bytes_releasable)},
    Metric{"largest_free_block", "largest_free_block_bytes", MetricType::kGauge,
           "Largest free block inside held memory.", MEMARENA_INT(largest_free_block)},
    Metric{"fragmentation", "fragmentation_ratio", MetricType::kGauge,
           "1 - largest_free_block / free bytes inside held memory.", nullptr,
           [](const AllocatorStats& s) { return s.fragmentation; }},
    Metric{"peak_bytes_in_use", "peak_bytes_in_use", MetricType::kGauge,
           "Largest bytes_in_use since start or the last peak reset.",
           MEMARENA_INT(peak_bytes_in_use)},
    Metric{"peak_bytes_requested", "peak_bytes_requested", MetricType::kGauge,
           "Largest bytes_requested since start or the last peak reset.",
           MEMARENA_INT(peak_bytes_requested)},
    Metric{"peak_bytes_held", "peak_bytes_held", MetricType::kGauge,
           "Largest bytes_held since start or the last peak reset.",
           MEMARENA_INT(peak_bytes_held)},
    Metric{"limit_bytes", "limit_bytes", MetricType::kGauge,
           "Limit on held bytes (ceiling or max_mem); 0 means unlimited.",
           MEMARENA_INT(limit_bytes)},
    Metric{"max_alloc_size", "max_alloc_size_bytes", MetricType::kGauge,
           "Largest single allocation served.", MEMARENA_INT(max_alloc_size)},
    Metric{"num_allocs", "allocs_total", MetricType::kCounter, "Allocations served.",
           MEMARENA_INT(num_allocs)},
    Metric{"num_frees", "frees_total", MetricType::kCounter, "Frees.", MEMARENA_INT(num_frees)},
    Metric{"num_reserves", "reserves_total", MetricType::kCounter,
           "Regions or spans obtained from the OS or device.", MEMARENA_INT(num_reserves)},
    Metric{"num_releases", "releases_total", MetricType::kCounter,
           "Regions or spans given back to the OS or device.", MEMARENA_INT(num_releases)},
    Metric{"bytes_released", "released_bytes_total", MetricType::kCounter,
           "Bytes given back to the OS or device.", MEMARENA_INT(bytes_released)},
    Metric{"num_ooms", "ooms_total", MetricType::kCounter, "Failed allocations.",
           MEMARENA_INT(num_ooms)},
    // ORT's num_arena_extensions falls when a shrink returns a region: it is a gauge. A
    // Prometheus counter must never decrease, so the total is exported on its own.
    Metric{"num_arena_extensions", "arena_extensions", MetricType::kGauge,
           "Arena growth steps whose regions are still held.", MEMARENA_INT(num_arena_extensions)},
    Metric{"num_arena_extensions_total", "arena_extensions_total", MetricType::kCounter,
           "Arena growth steps ever taken.", MEMARENA_INT(num_arena_extensions_total)},
    Metric{"num_arena_shrinkages", "arena_shrinkages_total", MetricType::kCounter,
           "Releases that shrank an arena.", MEMARENA_INT(num_arena_shrinkages)},
    Metric{"virtual_bytes_reserved", "virtual_reserved_bytes", MetricType::kGauge,
           "Expandable arena: virtual address space reserved up front.",
           MEMARENA_INT(virtual_bytes_reserved)},
    Metric{"virtual_bytes_used", "virtual_used_bytes", MetricType::kGauge,
           "Expandable arena: the part of the reservation its chunks span.",
           MEMARENA_INT(virtual_bytes_used)},
    Metric{"num_commits", "commits_total", MetricType::kCounter,
           "Expandable arena: granule runs given memory.", MEMARENA_INT(num_commits)},
    Metric{"num_decommits", "decommits_total", MetricType::kCounter,
           "Expandable arena: granule runs whose memory went back.", MEMARENA_INT(num_decommits)},
    Metric{"bytes_decommitted", "decommitted_bytes_total", MetricType::kCounter,
           "Expandable arena: bytes decommitted.", MEMARENA_INT(bytes_decommitted)},
    Metric{"bytes_in_thread_caches", "thread_cache_bytes", MetricType::kGauge,
           "Host: held bytes that are free objects cached by threads.",
           MEMARENA_INT(bytes_in_thread_caches)},
    Metric{"bytes_in_central_lists", "central_list_bytes", MetricType::kGauge,
           "Host: held bytes that are free objects in the central (shared) lists.",
           MEMARENA_INT(bytes_in_central_lists)},
    Metric{"bytes_uncarved", "central_list_uncarved_bytes", MetricType::kGauge,
           "Host: of the central lists' bytes, objects of partly carved spans never handed out.",
           MEMARENA_INT(bytes_uncarved)},
    Metric{"bytes_metadata", "metadata_bytes", MetricType::kGauge,
           "Host: metadata handed out (span records, thread caches), outside held.",
           MEMARENA_INT(bytes_metadata)},
    Metric{"bytes_moved", "moved_bytes_total", MetricType::kCounter,
           "Host: free pages a growth took over by mremap instead of faulting fresh ones.",
           MEMARENA_INT(bytes_moved)},
    Metric{"huge_page_size", "huge_page_size_bytes", MetricType::kGauge,
           "Host: the kernel's transparent huge page size; 0 when it has none.",
           MEMARENA_INT(huge_page_size)},
    Metric{"huge_pages_enabled", "huge_pages_enabled", MetricType::kGauge,
           "Host: 1 when the huge_pages key is on.", MEMARENA_INT(huge_pages_enabled)},
    Metric{"huge_page_blocks", "huge_page_blocks_total", MetricType::kCounter,
           "Host: large blocks that asked for transparent huge pages.",
           MEMARENA_INT(huge_page_blocks)},
    Metric{"huge_pages_committed", "huge_pages_committed_total", MetricType::kCounter,
           "Host: whole huge pages committed for requests smaller than one.",
           MEMARENA_INT(huge_pages_committed)},
    Metric{"huge_page_fault_bound_nanos", "huge_page_fault_bound_seconds", MetricType::kGauge,
           "Host: a huge page's first write fault slower than this counts as slow.",
           MEMARENA_INT(huge_page_fault_bound_nanos), kNanoseconds},
    Metric{"huge_page_slow_fault_nanos", "huge_page_slow_fault_seconds", MetricType::kGauge,
           "Host: the slow first write fault that switched huge pages off; 0 while they are on.",
           MEMARENA_INT(huge_page_slow_fault_nanos), kNanoseconds},
};

#undef MEMARENA_INT

// JSON and Prometheus label values share the escapes they need: backslash, quote, newline.
std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out;
}

std::string Value(const Metric& m, const AllocatorStats& s) {
  return m.integer != nullptr ? fmt::format("{}", m.integer(s)) : fmt::format("{:.6g}", m.ratio(s));
}

std::string PrometheusValue(const Metric& m, const AllocatorStats& s) {
  if (m.nanoseconds) return fmt::format("{:.9g}", static_cast<double>(m.integer(s)) / 1e9);
  return Value(m, s);
}

void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view help,
                        MetricType type) {
  out += fmt::format("# HELP memarena_{} {}\n# TYPE memarena_{} {}\n", name, help, name,
                     type == MetricType::kGauge ? "gauge" : "counter");
}

// A family with one sample per row of a per-allocator table (size classes, free-span
// lengths), labelled by the row.
template <typename Row>
struct RowMetric {
  std::string_view name;
  MetricType type;
  std::string_view help;
  std::uint64_t (*get)(const Row&);
};

}  // namespace

NamedStats Snapshot(const Allocator& allocator) {
  return NamedStats{std::string(allocator.name()), allocator.GetStats()};
}

std::string JsonString(std::string_view text) { return fmt::format("\"{}\"", Escape(text)); }

std::string StatsToJson(const AllocatorStats& stats, std::string_view allocator_name,
                        std::span<const SizeClassStats> size_classes) {
  std::string out = fmt::format("{{\"allocator\":{}", JsonString(allocator_name));
  for (const Metric& m : kMetrics) out += fmt::format(",\"{}\":{}", m.field, Value(m, stats));
  out += ",\"size_classes\":[";
  for (std::size_t i = 0; i < size_classes.size(); ++i) {
    const SizeClassStats& c = size_classes[i];
    out += fmt::format(
        "{}{{\"size\":{},\"num_allocs\":{},\"num_frees\":{},\"bytes_in_use\":{},"
        "\"bytes_in_thread_caches\":{},\"bytes_in_central_lists\":{},\"bytes_uncarved\":{}}}",
        i == 0 ? "" : ",", c.size, c.num_allocs, c.num_frees, c.bytes_in_use,
        c.bytes_in_thread_caches, c.bytes_in_central_lists, c.bytes_uncarved);
  }
  out += "],\"free_spans_by_length\":[";
  for (std::size_t b = 0; b < kFreeSpanBuckets; ++b) {
    const FreeSpanCount& c = stats.free_spans_by_length[b];
    out += fmt::format("{}{{\"min_bytes\":{},\"spans\":{},\"bytes\":{}}}", b == 0 ? "" : ",",
                       kFreeSpanBucketBase << b, c.spans, c.bytes);
  }
  out += "]}";
  return out;
}

std::string StatsToJson(std::span<const NamedStats> all) {
  std::string out = "[";
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i != 0) out += ',';
    out += StatsToJson(all[i].stats, all[i].allocator, all[i].size_classes);
  }
  out += "]";
  return out;
}

std::string StatsToPrometheus(std::span<const NamedStats> all) {
  std::string out;
  for (const Metric& m : kMetrics) {
    AppendFamilyHeader(out, m.prometheus, m.help, m.type);
    for (const NamedStats& n : all) {
      out += fmt::format("memarena_{}{{allocator=\"{}\"}} {}\n", m.prometheus,
                         Escape(n.allocator), PrometheusValue(m, n.stats));
    }
  }
  // The host's committed free spans by length, one sample per bucket, labelled with the
  // bucket's shortest span (the JSON array's min_bytes); other allocators give zeros, as
  // every family has a sample per allocator.
  static constexpr std::array kFreeSpanMetrics = {
      RowMetric<FreeSpanCount>{"free_spans", MetricType::kGauge,
                               "Host free spans (committed) from min_bytes to just under "
                               "twice it; the longest bucket has no top.",
                               [](const FreeSpanCount& c) { return c.spans; }},
      RowMetric<FreeSpanCount>{"free_span_bytes", MetricType::kGauge,
                               "Bytes in the host free spans of that length.",
                               [](const FreeSpanCount& c) { return std::uint64_t{c.bytes}; }},
  };
  for (const RowMetric<FreeSpanCount>& m : kFreeSpanMetrics) {
    AppendFamilyHeader(out, m.name, m.help, m.type);
    for (const NamedStats& n : all) {
      for (std::size_t b = 0; b < kFreeSpanBuckets; ++b) {
        out += fmt::format("memarena_{}{{allocator=\"{}\",min_bytes=\"{}\"}} {}\n", m.name,
                           Escape(n.allocator), kFreeSpanBucketBase << b,
                           m.get(n.stats.free_spans_by_length[b]));
      }
    }
  }
  static constexpr std::array kSizeClassMetrics = {
      RowMetric<SizeClassStats>{"size_class_bytes_in_use", MetricType::kGauge,
                                "Bytes in live objects of one host size class.",
                                [](const SizeClassStats& c) {
                                  return std::uint64_t{c.bytes_in_use};
                                }},
      RowMetric<SizeClassStats>{"size_class_allocs_total", MetricType::kCounter,
                                "Allocations served from one host size class.",
                                [](const SizeClassStats& c) { return c.num_allocs; }},
      RowMetric<SizeClassStats>{"size_class_frees_total", MetricType::kCounter,
                                "Frees into one host size class.",
                                [](const SizeClassStats& c) { return c.num_frees; }},
      RowMetric<SizeClassStats>{"size_class_thread_cache_bytes", MetricType::kGauge,
                                "Bytes in free objects of one host size class in thread caches.",
                                [](const SizeClassStats& c) {
                                  return std::uint64_t{c.bytes_in_thread_caches};
                                }},
      RowMetric<SizeClassStats>{"size_class_central_list_bytes", MetricType::kGauge,
                                "Bytes in free objects of one host size class in the central "
                                "lists (transfer batches, span free lists, uncarved objects).",
                                [](const SizeClassStats& c) {
                                  return std::uint64_t{c.bytes_in_central_lists};
                                }},
      RowMetric<SizeClassStats>{"size_class_central_list_uncarved_bytes", MetricType::kGauge,
                                "Of those bytes, objects of partly carved spans never handed "
                                "out.",
                                [](const SizeClassStats& c) {
                                  return std::uint64_t{c.bytes_uncarved};
                                }},
  };
  bool any_classes = false;
  for (const NamedStats& n : all) any_classes = any_classes || !n.size_classes.empty();
  if (!any_classes) return out;
  for (const RowMetric<SizeClassStats>& m : kSizeClassMetrics) {
    AppendFamilyHeader(out, m.name, m.help, m.type);
    for (const NamedStats& n : all) {
      for (const SizeClassStats& c : n.size_classes) {
        out += fmt::format("memarena_{}{{allocator=\"{}\",size=\"{}\"}} {}\n", m.name,
                           Escape(n.allocator), c.size, m.get(c));
      }
    }
  }
  return out;
}

std::string StatsToPrometheus(const AllocatorStats& stats, std::string_view allocator_name) {
  const NamedStats one{std::string(allocator_name), stats};
  return StatsToPrometheus(std::span<const NamedStats>(&one, 1));
}

std::vector<std::pair<std::string, std::int64_t>> PyTorchMemoryStats(const AllocatorStats& s) {
  auto i = [](auto v) { return static_cast<std::int64_t>(v); };
  // memarena has one pool per allocator, so only the ".all" keys are filled. "inactive
  // split" is cached memory that cannot be returned: held, minus in use, minus releasable.
  const std::size_t cached = s.bytes_held - std::min(s.bytes_held, s.bytes_in_use);
  const std::size_t inactive_split = cached - std::min(cached, s.bytes_releasable);
  return {
      {"allocated_bytes.all.current", i(s.bytes_in_use)},
      {"allocated_bytes.all.peak", i(s.peak_bytes_in_use)},
      {"active_bytes.all.current", i(s.bytes_in_use)},
      {"active_bytes.all.peak", i(s.peak_bytes_in_use)},
      {"requested_bytes.all.current", i(s.bytes_requested)},
      {"requested_bytes.all.peak", i(s.peak_bytes_requested)},
      {"reserved_bytes.all.current", i(s.bytes_held)},
      {"reserved_bytes.all.peak", i(s.peak_bytes_held)},
      {"reserved_bytes.all.freed", i(s.bytes_released)},
      {"inactive_split_bytes.all.current", i(inactive_split)},
      {"allocation.all.allocated", i(s.num_allocs)},
      {"allocation.all.freed", i(s.num_frees)},
      {"allocation.all.current", i(s.num_allocs) - i(s.num_frees)},
      {"segment.all.allocated", i(s.num_reserves)},
      {"segment.all.freed", i(s.num_releases)},
      {"segment.all.current", i(s.num_reserves) - i(s.num_releases)},
      {"num_ooms", i(s.num_ooms)},
  };
}

std::vector<std::pair<std::string, std::int64_t>> OrtAllocatorStats(const AllocatorStats& s) {
  auto i = [](auto v) { return static_cast<std::int64_t>(v); };
  return {
      {"num_allocs", i(s.num_allocs)},
      {"num_reserves", i(s.num_reserves)},
      {"num_arena_extensions", i(s.num_arena_extensions)},
      {"num_arena_shrinkages", i(s.num_arena_shrinkages)},
      {"bytes_in_use", i(s.bytes_in_use)},
      {"total_allocated_bytes", i(s.bytes_held)},
      {"max_bytes_in_use", i(s.peak_bytes_in_use)},
      {"max_alloc_size", i(s.max_alloc_size)},
      // 0 stands for unlimited, as everywhere in memarena (see docs/observability.md).
      {"bytes_limit", i(s.limit_bytes)},
  };
}

}  // namespace memarena
