// ReplayTarget: an allocator made ready for a replay (host with its ceiling, a BFC arena
// with its ArenaConfig, a planned arena, malloc), built by name from the command line.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "memarena/allocator.h"

namespace memarena::tools {

class ReplayTarget {
 public:
  virtual ~ReplayTarget() = default;
  virtual Allocator& allocator() = 0;
  // What tables and legends call it, e.g. "bfc (kSameAsRequested)".
  virtual std::string label() const = 0;
  // True when the measured replay should follow an unmeasured one that teaches the allocator
  // the trace (the planned arena plans a trace without phases from a first run).
  virtual bool WantsRecordingPass(bool has_phases) const {
    static_cast<void>(has_phases);
    return false;
  }
  // Phase hooks (the planned arena's BeginRun/EndRun). BeginPhase returns false when the
  // allocator could not start the phase for lack of memory.
  virtual bool BeginPhase(std::uint64_t key) {
    static_cast<void>(key);
    return true;
  }
  virtual void EndPhase() {}
};

// The allocator names MakeTarget accepts, in the order compare shows them.
std::span<const std::string_view> TargetNames();

// Builds a target: `name` is host, bfc, planned or system; `config` is "key:value,..." for
// it (host: ceiling; bfc: ArenaConfig keys; planned: cache_capacity, plan_budget_ms; system:
// limit). Throws ConfigError naming the allocator, the key and what is allowed.
std::unique_ptr<ReplayTarget> MakeTarget(std::string_view name, std::string_view config);

// The keys each allocator takes, for --help.
std::string TargetConfigHelp();

}  // namespace memarena::tools
