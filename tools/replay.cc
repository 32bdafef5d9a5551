// The replay engine: a trace is first compiled into slot operations (so the timed loop does
// no hashing), then run through the target with sampling of its stats.
#include "replay.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>


namespace memarena::tools {
namespace {

// One replayable operation: allocate `size` into slot, or free the slot.
struct Op {
  enum class Kind : std::uint8_t { kAllocate, kFree, kSkip } kind = Kind::kSkip;
  std::uint32_t slot = 0;
  std::size_t size = 0;
};

struct Compiled {
  std::vector<Op> ops;
  std::size_t slots = 0;
  std::size_t unknown_frees = 0;
  std::size_t trace_failures = 0;
};

Compiled Compile(std::span<const TraceEvent> trace) {
  Compiled c;
  c.ops.resize(trace.size());
  std::unordered_map<std::uintptr_t, std::uint32_t> live;  // recorded pointer -> slot
  live.reserve(1024);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceEvent& r = trace[i];
    Op& op = c.ops[i];
    op.size = r.size;
    switch (r.action) {
      case TraceAction::kAllocate: {
        op.kind = Op::Kind::kAllocate;
        op.slot = static_cast<std::uint32_t>(c.slots++);
        // A pointer allocated again without a free row in between: the old block stays
        // live (leaked) until the end, as it would have in the recorded run.
        live[r.pointer] = op.slot;
        break;
      }
      case TraceAction::kFree: {
        const auto it = live.find(r.pointer);
        if (it == live.end()) {
          ++c.unknown_frees;
          break;
        }
        op.kind = Op::Kind::kFree;
        op.slot = it->second;
        live.erase(it);
        break;
      }
      case TraceAction::kAllocateFailure:
        ++c.trace_failures;
        break;
    }
  }
  return c;
}

using Clock = std::chrono::steady_clock;

class Pass {
 public:
  Pass(const Compiled& compiled, ReplayTarget& target, const ReplayOptions& options,
       bool measured)
      : compiled_(compiled), target_(target), alloc_(target.allocator()), options_(options),
        measured_(measured), slots_(compiled.slots, nullptr) {}

  ReplayResult Run() {
    const std::size_t n = compiled_.ops.size();
    const std::size_t stride = std::max<std::size_t>(1, n / std::max<std::size_t>(1, options_.max_samples));
    const std::size_t progress_stride = std::max<std::size_t>(1, n / 100);
    std::vector<Phase> phases = options_.phases;
    if (phases.empty()) phases.push_back({0, 0});
    std::size_t next_phase = 0;
    bool phase_open = false;

    if (measured_) alloc_.ResetPeakStats();
    const auto start = Clock::now();
    Sample(0);
    for (std::size_t i = 0; i < n; ++i) {
      while (next_phase < phases.size() && phases[next_phase].first_event <= i) {
        if (phase_open) EndPhase(i);
        phase_open = target_.BeginPhase(phases[next_phase].key);
        if (!phase_open) Mark(ReplayMark::Kind::kOom, i, 0);
        ++next_phase;
      }
      const Op& op = compiled_.ops[i];
      if (op.kind == Op::Kind::kAllocate) {
        void* p = alloc_.TryAllocate(op.size);
        if (p == nullptr && op.size != 0) {
          Mark(ReplayMark::Kind::kOom, i, op.size);
        } else {
          ++result_.allocations;
        }
        slots_[op.slot] = p;
      } else if (op.kind == Op::Kind::kFree) {
        void*& p = slots_[op.slot];
        if (p != nullptr) {
          alloc_.Deallocate(p);
          ++result_.frees;
        }
        p = nullptr;
      }
      if (measured_ && (i + 1) % stride == 0) Sample(i + 1);
      if (options_.progress && ((i + 1) % progress_stride == 0 || i + 1 == n)) {
        options_.progress(i + 1, n);
      }
    }
    if (phase_open) EndPhase(n);
    Sample(n);
    const double total = std::chrono::duration<double>(Clock::now() - start).count();

    result_.final_stats = alloc_.GetStats();
    result_.allocator = target_.label();
    result_.events = n;
    result_.unknown_frees = compiled_.unknown_frees;
    result_.trace_failures = compiled_.trace_failures;
    result_.peak_in_use = result_.final_stats.peak_bytes_in_use;
    result_.peak_requested = result_.final_stats.peak_bytes_requested;
    result_.peak_held = result_.final_stats.peak_bytes_held;
    result_.limit_bytes = result_.final_stats.limit_bytes;
    result_.seconds = std::max(total - sampling_seconds_, 1e-9);
    result_.ops_per_second =
        static_cast<double>(result_.allocations + result_.frees + result_.ooms) / result_.seconds;
    for (void*& p : slots_) {
      alloc_.Deallocate(p);
      p = nullptr;
    }
    return std::move(result_);
  }

 private:
  void EndPhase(std::size_t event) {
    target_.EndPhase();
    if (!options_.release_between_phases) return;
    Sample(event);
    const std::size_t released = alloc_.ReleaseUnusedSpans();
    result_.released_bytes += released;
    Mark(ReplayMark::Kind::kRelease, event, released);
  }

  void Mark(ReplayMark::Kind kind, std::size_t event, std::size_t bytes) {
    if (kind == ReplayMark::Kind::kOom) ++result_.ooms;
    if (!measured_) return;
    result_.marks.push_back({kind, event, bytes});
    Sample(event);
  }

  void Sample(std::size_t event) {
    if (!measured_) return;
    const auto start = Clock::now();
    const AllocatorStats s = alloc_.GetStats();
    result_.timeline.push_back({event, s.bytes_in_use, s.bytes_held});
    if (result_.timeline.size() == 1 || s.bytes_held > held_at_fragmentation_) {
      held_at_fragmentation_ = s.bytes_held;
      result_.fragmentation = s.fragmentation;
    }
    sampling_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
  }

  const Compiled& compiled_;
  ReplayTarget& target_;
  Allocator& alloc_;
  const ReplayOptions& options_;
  const bool measured_;
  std::vector<void*> slots_;
  ReplayResult result_;
  double sampling_seconds_ = 0.0;
  std::size_t held_at_fragmentation_ = 0;
};

}  // namespace

ReplayResult Replay(std::span<const TraceEvent> trace, ReplayTarget& target,
                    const ReplayOptions& options) {
  const Compiled compiled = Compile(trace);
  if (target.WantsRecordingPass(!options.phases.empty())) {
    if (options.phase) options.phase("recording and planning");
    Pass(compiled, target, options, /*measured=*/false).Run();
  }
  if (options.phase) options.phase("replaying");
  return Pass(compiled, target, options, /*measured=*/true).Run();
}

std::size_t TracePeakRequested(std::span<const TraceEvent> trace) {
  const Compiled compiled = Compile(trace);
  std::vector<std::size_t> sizes(compiled.slots, 0);
  std::size_t live = 0, peak = 0;
  for (const Op& op : compiled.ops) {
    if (op.kind == Op::Kind::kAllocate) {
      sizes[op.slot] = op.size;
      live += op.size;
      peak = std::max(peak, live);
    } else if (op.kind == Op::Kind::kFree) {
      live -= sizes[op.slot];
    }
  }
  return peak;
}

}  // namespace memarena::tools
