// Stats export: AllocatorStats as JSON and as Prometheus text exposition, plus the same
// numbers under PyTorch memory_stats() keys and ONNX Runtime AllocatorStats names.
// docs/observability.md lists every metric and the mapping.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memarena/allocator.h"
#include "memarena/stats.h"

namespace memarena {

// One allocator's stats under the name that labels them; for the host, its per-class counters
// too (HostSizeClassStats(); empty for every other allocator).
struct NamedStats {
  NamedStats() = default;
  NamedStats(std::string allocator_name, const AllocatorStats& allocator_stats,
             std::vector<SizeClassStats> classes = {})
      : allocator(std::move(allocator_name)),
        stats(allocator_stats),
        size_classes(std::move(classes)) {}

  std::string allocator;
  AllocatorStats stats;
  std::vector<SizeClassStats> size_classes;
};

// A snapshot of `allocator` (GetStats() under name(); size_classes left empty: add
// HostSizeClassStats() for the host). Locks like GetStats.
NamedStats Snapshot(const Allocator& allocator);

// `text` as a quoted JSON string ("..." with \\, \", \n and control characters escaped).
std::string JsonString(std::string_view text);

// One JSON object: {"allocator":"...","bytes_in_use":N,...,"size_classes":[...]}.
// Field names are AllocatorStats' field names; size_classes lists `size_classes` ([] when
// empty, as for every allocator but the host).
std::string StatsToJson(const AllocatorStats& stats, std::string_view allocator_name,
                        std::span<const SizeClassStats> size_classes = {});
// A JSON array of such objects, one per NamedStats with its size classes.
std::string StatsToJson(std::span<const NamedStats> all);

// Prometheus text exposition format (version 0.0.4): one # HELP and # TYPE per metric, then
// one sample per allocator labelled allocator="NAME". Metric names start with memarena_;
// counters end in _total. Size-class counters (NamedStats::size_classes) carry a second
// label, size="BYTES".
std::string StatsToPrometheus(std::span<const NamedStats> all);
std::string StatsToPrometheus(const AllocatorStats& stats, std::string_view allocator_name);

// The stats under torch.cuda.memory_stats() keys ("allocated_bytes.all.current", ...), for
// dashboards built for PyTorch. Only the keys memarena can fill are present; the mapping
// and what each key means here is in docs/observability.md.
std::vector<std::pair<std::string, std::int64_t>> PyTorchMemoryStats(const AllocatorStats& stats);

// The stats under onnxruntime::AllocatorStats field names (num_allocs, bytes_in_use,
// total_allocated_bytes, max_bytes_in_use, bytes_limit, ...).
std::vector<std::pair<std::string, std::int64_t>> OrtAllocatorStats(const AllocatorStats& stats);

}  // namespace memarena
