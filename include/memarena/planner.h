// The lifetime planner ("mem pattern"): offsets for tensors with known sizes and lifetimes
// in one block, plan validation, MiniMalloc-format CSV, a plan cache by input shape, and
// PlannedArena, the Allocator that serves a recorded pattern from one block.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memarena/allocator.h"
#include "memarena/tracing.h"

namespace memarena {

// One buffer to place. Its lifetime is the half-open interval [lower, upper) of abstract
// time steps, as in MiniMalloc's CSV. Two tensors conflict when their intervals intersect.
struct PlanTensor {
  std::string id;             // free-form name ("b1", "17"); used in messages and CSV
  std::size_t size = 0;       // bytes; 0 is allowed and occupies nothing
  std::size_t alignment = 1;  // a power of two; the offset is a multiple of it
  std::int64_t lower = 0;     // first time step the tensor is live
  std::int64_t upper = 0;     // first time step it is dead again (lower < upper)
};

// A tensor given by inclusive first and last use (TFLite style): [first_use, last_use + 1).
PlanTensor TensorFromUses(std::string id, std::size_t size, std::size_t alignment,
                          std::int64_t first_use, std::int64_t last_use);

// Throws std::invalid_argument naming the tensor (index and id) when a tensor has
// lower >= upper, an alignment that is not a power of two, or a size so large that
// offsets could overflow.
void ValidateTensors(const std::vector<PlanTensor>& tensors);

// The maximum over time of the sum of live sizes: no plan can use less. O(n log n).
std::size_t LowerBound(const std::vector<PlanTensor>& tensors);

// A placement: offsets[i] belongs to tensors[i].
struct Plan {
  std::vector<std::size_t> offsets;
  std::size_t arena_size = 0;   // max over tensors of offset + size
  std::size_t lower_bound = 0;  // LowerBound(tensors)
  std::string method;           // which algorithm produced it ("greedy-by-size", ...)

  // arena_size / lower_bound (1.0 when both are 0).
  double Ratio() const noexcept;
};

// Returns nullopt when the plan is valid for `tensors`: one offset per tensor, each a
// multiple of its alignment, arena_size = max(offset + size), and no two tensors that are
// live at the same time share a byte. Otherwise returns a description of the first
// violation found. O(n log n) time and O(n) memory, however many tensors overlap in time.
std::optional<std::string> ValidatePlan(const std::vector<PlanTensor>& tensors,
                                        const Plan& plan);

// Greedy by size (Pisarchyk & Lee 2020, TFLite): largest tensor first, each at the lowest
// offset (meeting its alignment) where it overlaps none of the already placed tensors
// that are live at the same time. Validates the input (see ValidateTensors). No pairwise
// overlap lists: a segment tree over time of merged byte ranges answers each step, so
// time is about O(n log^2 n) and memory O(n log n) in the worst case, O(n) typically.
Plan PlanGreedyBySize(const std::vector<PlanTensor>& tensors);

struct PlanOptions {
  // Wall-clock budget for the whole call, greedy included: PlanBest returns the best plan
  // found within budget plus a few milliseconds (or right after greedy, when greedy alone
  // takes longer). The result is never worse than greedy by size, and planning stops early
  // when it reaches the lower bound or the target.
  std::chrono::milliseconds budget{100};
  // When non-zero, the search aims for an arena of at most this many bytes and stops as
  // soon as it has one (MiniMalloc's "capacity"). 0: aim for the lower bound.
  std::size_t capacity_target = 0;
  // Use the exact branch-and-bound search (MiniMalloc style) after the heuristics.
  bool exact_search = true;
  std::uint64_t seed = 1;
};

// The best plan found within options.budget: greedy by size, then several orderings with
// local search, then an exact branch-and-bound that places buffers in canonical
// (lowest offset first) order with section-based pruning. Always valid; never larger
// than PlanGreedyBySize. Throws std::invalid_argument on bad input.
Plan PlanBest(const std::vector<PlanTensor>& tensors, const PlanOptions& options = {});

// ---- Traces -------------------------------------------------------------------------

// Turns a trace (memarena::TraceEvent of tracing.h; `pointer` names the allocation) into
// tensors in allocation order: the tensor of event i lives from i to its free event; a
// tensor never freed lives to the end; failed allocations are skipped. Throws
// std::invalid_argument on a free of an unknown or already freed id, or an id allocated
// twice while live.
std::vector<PlanTensor> TensorsFromTrace(const std::vector<TraceEvent>& events);

// ---- CSV (MiniMalloc format) --------------------------------------------------------

// A CSV problem: header id,lower,upper,size with optional alignment and offset columns.
struct PlanCsv {
  std::vector<PlanTensor> tensors;
  std::optional<std::vector<std::size_t>> offsets;  // present when the file has them
};

// Parses MiniMalloc CSV. Throws std::invalid_argument with the line number on a missing
// column, a bad number, a negative size, lower >= upper or a bad alignment.
PlanCsv ReadPlanCsv(std::istream& in);
PlanCsv ReadPlanCsvFile(const std::string& path);  // also throws when it cannot open

// The capacity in a MiniMalloc benchmark file name ("A.1048576.csv" -> 1048576): the
// number between the last two dots of the file name; 0 when there is none.
std::size_t CapacityFromFileName(std::string_view path);

// Writes id,lower,upper,size[,alignment][,offset]: the alignment column appears when some
// tensor has alignment > 1, the offset column when `plan` is given.
void WritePlanCsv(std::ostream& out, const std::vector<PlanTensor>& tensors,
                  const Plan* plan = nullptr);

// ---- Plan cache ---------------------------------------------------------------------

// The full input-shape signature of a run: one shape (dimension list) per input, compared
// exactly. {{2,3}} and {{3,2}} are different keys.
using ShapeSignature = std::vector<std::vector<std::int64_t>>;

// What a recorded run leaves behind: its tensors in allocation order and their plan.
struct MemoryPattern {
  std::vector<PlanTensor> tensors;
  Plan plan;
};

// A bounded map from shape signature to pattern with least-recently-used eviction.
// Thread-safe. Find and Insert cost O(log n) signature comparisons.
class PlanCache {
 public:
  // Throws std::invalid_argument when capacity is 0.
  explicit PlanCache(std::size_t capacity);
  ~PlanCache();
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  // The pattern for exactly these shapes, or nullptr. A hit becomes most recently used.
  std::shared_ptr<const MemoryPattern> Find(const ShapeSignature& shapes);

  // Stores (or replaces) the pattern for `shapes`, evicting the least recently used
  // entry when full.
  void Insert(const ShapeSignature& shapes, std::shared_ptr<const MemoryPattern> pattern);

  std::size_t size() const;
  std::size_t capacity() const noexcept { return capacity_; }
  std::uint64_t evictions() const;

 private:
  struct Impl;
  const std::size_t capacity_;
  std::unique_ptr<Impl> impl_;
};

// ---- PlannedArena -------------------------------------------------------------------

// How a recorded run becomes a plan: PlanBest by default. Runs on the planning thread.
using PlanFunction = std::function<Plan(const std::vector<PlanTensor>&, const PlanOptions&)>;

struct PlannedArenaOptions {
  std::size_t cache_capacity = 16;           // patterns kept, by input shape
  std::chrono::milliseconds plan_budget{50};  // PlanBest budget when a run ends
  PlanFunction planner;                       // empty: PlanBest
};

// An Allocator for a run whose allocation sequence repeats for the same input shapes
// (ONNX Runtime's mem pattern). Between BeginRun(shapes) and EndRun():
//  - with a cached pattern for `shapes`, the k-th allocation of the run is served at the
//    k-th planned offset inside one block from the upstream allocator, but only when its
//    size equals the planned size exactly, its alignment is met and no planned tensor
//    still live occupies those bytes; the first request that differs sends it and the
//    rest of the run to the upstream allocator, and EndRun re-plans from this run;
//  - without one, every request goes to the upstream allocator and the run is recorded;
//    EndRun hands the trace to the arena's planning thread, which plans it (PlanBest,
//    options.plan_budget) and caches it for `shapes`. Until that plan is cached, runs
//    with these shapes are recorded and served upstream again.
// Outside a run every request goes to the upstream allocator. When a run needs a block
// of a different size, the old block is returned to the upstream before the new one is
// taken, so memory never doubles (ONNX Runtime issue #14477). Thread-safe (one mutex,
// never held while planning: allocations do not wait for a plan).
class PlannedArena final : public Allocator {
 public:
  // `upstream` must outlive the arena.
  explicit PlannedArena(Allocator& upstream, PlannedArenaOptions options = {});
  // Waits for a plan in progress (at most about plan_budget), drops queued ones.
  ~PlannedArena() override;
  PlannedArena(const PlannedArena&) = delete;
  PlannedArena& operator=(const PlannedArena&) = delete;

  // Starts a run for these input shapes. Throws std::logic_error when a run is already
  // open, and OutOfMemory when the pattern block cannot be obtained.
  void BeginRun(const ShapeSignature& shapes);
  // Ends the run. A recorded run is queued for planning on the planning thread (started
  // on first use; when a thread cannot be started the plan is made here, still outside
  // the lock) and EndRun returns without waiting. Tensors still live at EndRun are
  // treated as live to the end of the run. Throws std::logic_error without an open run.
  void EndRun();
  // Blocks until every run ended so far is planned and cached (or failed to plan).
  void WaitForPlans();
  // True while a recorded run waits for, or is in, planning.
  bool Planning() const;
  // Why the last plan failed (the planner threw, e.g. out of memory); empty when none did.
  std::string LastPlanError() const;

  // True when the current run is served from a cached pattern (false while recording).
  bool ServingPattern() const;
  // Bytes of the pattern block now held (0 when none).
  std::size_t PatternBlockSize() const;
  // Requests of the current or last run served from the pattern block / sent upstream.
  std::uint64_t PlannedHits() const;
  std::uint64_t FallbackAllocations() const;
  const PlanCache& cache() const noexcept;

  // A pointer that is not a live block of this arena goes to on_invalid_free (it is never
  // passed upstream).
  void ResetPeakStats() override;
  std::size_t ReleaseUnusedSpans() override;
  AllocatorKind kind() const noexcept override;
  std::string_view name() const noexcept override { return "planned_arena"; }
  std::string DescribeFailure(std::size_t bytes, std::size_t alignment) const override;

 private:
  // Streams are ignored: a pattern block has no stream order. Never throws (a bookkeeping
  // failure is a counted OOM).
  void* DoAllocate(std::size_t bytes, std::size_t alignment, StreamHandle stream) noexcept override;
  // kNotOwned unless `ptr` is a live block of this arena (planned or sent upstream).
  FreeResult DoDeallocate(void* ptr, StreamHandle stream) noexcept override;
  std::size_t DoUsableSize(const void* ptr) const noexcept override;
  AllocatorStats DoGetStats() const override;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memarena
