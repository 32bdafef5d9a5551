// Why a BFC arena request failed, recorded without formatting on the allocation path and
// turned into the out-of-memory diagnostic only when Allocate throws.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "memarena/arena.h"

namespace memarena::arena {

enum class FailureKind {
  kNone,
  kLimit,     // ORT: "Available memory of X is smaller than requested bytes of Y"
  kSource,    // ORT: "Failed to allocate memory for requested buffer of size Y"
  kTooLarge,  // the request cannot be represented (near the size_t limit)
  kMetadata,  // the arena's own bookkeeping could not grow (operator new failed)
  kReservation,  // expandable: the virtual range reserved up front has no room left
};

struct ArenaFailure {
  ArenaFailure() = default;
  ArenaFailure(const void* a, std::size_t b, std::size_t align) : arena(a), bytes(b), alignment(align) {}

  const void* arena = nullptr;  // which arena recorded it
  std::size_t bytes = 0;        // the caller's request
  std::size_t alignment = 0;
  FailureKind kind = FailureKind::kNone;
  std::size_t needed = 0;       // rounded request plus alignment slack
  std::size_t available = 0;    // kLimit: what max_mem still allowed; kReservation: room left
  std::size_t first_try = 0;    // kSource: the first and last sizes asked of the source
  std::size_t last_try = 0;
  std::size_t attempts = 0;
  std::optional<SourceCapacity> capacity;  // kSource: what the source said it had
};

// The failure last recorded on this thread (each thread sees its own).
ArenaFailure& ThreadLastFailure() noexcept;

// The reason and the knob advice for `failure`, in ORT's words plus memarena's.
std::string FailureReason(const ArenaFailure& failure, const ArenaConfig& config,
                          const AllocatorStats& stats, std::string_view source_name);
std::string FailureAdvice(const ArenaFailure& failure, const AllocatorStats& stats);

}  // namespace memarena::arena
