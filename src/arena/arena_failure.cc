// Out-of-memory text of the BFC arena: ORT's two messages, the source's capacity, and
// which ArenaConfig knob helps.
#include "arena/arena_failure.h"

#include <fmt/format.h>

namespace memarena::arena {

ArenaFailure& ThreadLastFailure() noexcept {
  thread_local ArenaFailure failure;
  return failure;
}

std::string FailureReason(const ArenaFailure& f, const ArenaConfig& config,
                          const AllocatorStats& stats, std::string_view source_name) {
  switch (f.kind) {
    case FailureKind::kLimit:
      return fmt::format(
          "Available memory of {} is smaller than requested bytes of {} (max_mem {} minus held {}, "
          "of which {} in use; {} already given back and the check retried)",
          f.available, f.needed, FormatBytes(config.max_mem), FormatBytes(stats.bytes_held),
          FormatBytes(stats.bytes_in_use),
          config.expandable_segments ? "free granules were" : "fully free regions were");
    case FailureKind::kReservation:
      return fmt::format(
          "the virtual reservation of source '{}' is exhausted, not max_mem: {} reserved, {} of it "
          "spanned by chunks, {} left, growing needed {} (held {}, of which {} in use)",
          source_name, FormatBytes(stats.virtual_bytes_reserved), FormatBytes(stats.virtual_bytes_used),
          FormatBytes(f.available), FormatBytes(f.first_try), FormatBytes(stats.bytes_held),
          FormatBytes(stats.bytes_in_use));
    case FailureKind::kSource: {
      std::string text = fmt::format(
          "Failed to allocate memory for requested buffer of size {}: source '{}' refused {} "
          "request(s) from {} down to {}, also after {} given back",
          f.needed, source_name, f.attempts, FormatBytes(f.first_try), FormatBytes(f.last_try),
          config.expandable_segments ? "free granules were" : "free regions were");
      if (f.capacity) {
        text += fmt::format(" (source free {} of {})", FormatBytes(f.capacity->free_bytes),
                            FormatBytes(f.capacity->total_bytes));
      }
      return text;
    }
    case FailureKind::kTooLarge:
      return fmt::format("a request of {} bytes is larger than any arena can serve", f.bytes);
    case FailureKind::kMetadata:
      return "the arena's bookkeeping (chunk records, free bins) could not grow: operator new "
             "failed, e.g. under a ceiling on the host heap";
    case FailureKind::kNone:
      break;
  }
  return "the request does not fit";
}

std::string FailureAdvice(const ArenaFailure& f, const AllocatorStats& stats) {
  if (f.kind == FailureKind::kTooLarge) {
    return "Check how the size was computed: no max_mem, release or free makes room for it.";
  }
  std::string advice;
  if (f.kind == FailureKind::kMetadata) {
    advice = "Free host memory or raise the host ceiling (MEMARENA_CONF=ceiling:SIZE): the "
             "arena keeps its chunk records on the host heap.";
  } else if (f.kind == FailureKind::kReservation) {
    advice =
        "Reserve a larger virtual range (HostVirtualMemorySource's reserve_bytes, or the CUDA "
        "virtual-memory source's reservation); max_mem is not what stopped this request. "
        "ReleaseUnusedSpans() gives back the address space of a fully free arena.";
  } else if (f.kind == FailureKind::kSource && stats.virtual_bytes_reserved != 0) {
    advice =
        "The memory behind the source is exhausted: free memory held outside this arena, or set "
        "max_mem below the source's capacity; every free granule of this arena was already "
        "decommitted.";
  } else if (f.kind == FailureKind::kSource) {
    advice =
        "The memory source is exhausted: free memory held outside this arena, or set max_mem "
        "below the source's capacity; arena_extend_strategy:kSameAsRequested or a smaller "
        "max_power_of_two_extend_bytes makes each extension smaller.";
  } else {
    advice =
        "Raise max_mem or free memory first; ReleaseUnusedSpans() only helps other arenas, "
        "this one already gave back its free regions.";
  }
  // An expandable arena has no dead tails or separate regions for these knobs to fix.
  if (stats.fragmentation > 0.25 && stats.virtual_bytes_reserved == 0) {
    advice += fmt::format(
        " Fragmentation is {:.0f}%: arena_extend_strategy:kSameAsRequested, a smaller "
        "max_dead_bytes_per_chunk, or ReleaseUnusedSpans() between runs keeps held memory "
        "closer to what is in use.",
        stats.fragmentation * 100.0);
  }
  return advice;
}

}  // namespace memarena::arena
