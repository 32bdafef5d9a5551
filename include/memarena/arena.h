// BfcArena: ONNX Runtime's best-fit-with-coalescing arena over any MemorySource, tuned by
// ArenaConfig (OrtArenaCfg's knobs), with optional stream-ordered reuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "memarena/allocator.h"
#include "memarena/memory_source.h"
#include "memarena/observability.h"

namespace memarena {

enum class ArenaExtendStrategy { kNextPowerOfTwo, kSameAsRequested };

// OrtArenaCfg's fields with the same names, meanings and defaults.
struct ArenaConfig {
  // Limit on held (reserved) bytes; 0 = unlimited. ORT's max_mem / bytes_limit.
  std::size_t max_mem = 0;
  ArenaExtendStrategy arena_extend_strategy = ArenaExtendStrategy::kNextPowerOfTwo;
  // Size of the first region under kNextPowerOfTwo (later regions double from it).
  std::size_t initial_chunk_size_bytes = std::size_t{1} << 20;
  // A free chunk is split when the leftover is at least this (or the chunk is >= 2x the request).
  std::size_t max_dead_bytes_per_chunk = std::size_t{128} << 20;
  // The growth size kNextPowerOfTwo restarts from after a shrink (ReleaseUnusedSpans).
  std::size_t initial_growth_chunk_size_bytes = std::size_t{2} << 20;
  // kNextPowerOfTwo stops doubling here; a larger request still gets its own region.
  std::size_t max_power_of_two_extend_bytes = std::size_t{1} << 30;

  // Beyond OrtArenaCfg. The arena over a VirtualMemorySource: one growing virtual range,
  // extended by exactly what is missing at its end, every free chunk split off, and free
  // granules decommitted (max_mem then caps committed bytes). Needs a VirtualMemorySource.
  bool expandable_segments = false;
  // Expandable only: when held exceeds in use by more than this, free granules are
  // decommitted (the end of the range first, then the largest free chunks) until it exceeds
  // by half of it. In use here is the most in use over the last one or two epochs of 2048
  // frees, so a working set that swings keeps its granules; checked before each commit and
  // at each epoch's end. ReleaseUnusedSpans decommits every free granule.
  std::size_t expandable_decommit_threshold = std::size_t{16} << 20;

  // Parses "key:value,..." with the keys above. Sizes take B, K/KiB, M/MiB, G/GiB, T/TiB;
  // arena_extend_strategy takes kNextPowerOfTwo|kSameAsRequested (or 0|1 as in ORT);
  // expandable_segments takes 0|1.
  // Throws ConfigError naming the key and the allowed values on an unknown key, a bad
  // value, or a value that Validate() rejects (one line per bad key).
  static ArenaConfig Parse(std::string_view text);

  // Parses the environment variable `variable` (defaults when unset or empty); throws like Parse.
  static ArenaConfig FromEnvironment(const char* variable);

  // Throws ConfigError naming the key and the allowed range when a size is outside it:
  // every size at most 256 TiB (so the arena's rounding and doubling stay in range),
  // initial sizes positive, max_power_of_two_extend_bytes at least 256.
  void Validate() const;
};

// The keys ArenaConfig::Parse accepts, one line each with the value, default and meaning;
// generated from the rows the parser reads.
std::string ArenaConfigHelp();

// How the arena learns that work on a stream has finished (CUDA events for a device).
// Implementations must be thread-safe.
class StreamFence {
 public:
  virtual ~StreamFence() = default;
  // Marks "now" on `stream`; returns a sequence number that grows per stream. Never fails
  // (an implementation that cannot record waits for the stream instead).
  virtual std::uint64_t Record(StreamHandle stream) noexcept = 0;
  // True once all work queued on `stream` before Record returned `seq` has completed.
  // Must not block.
  virtual bool HasCompleted(StreamHandle stream, std::uint64_t seq) noexcept = 0;
};

// One chunk of an arena region, as BfcArena::Segments() reports it.
struct ArenaBlock {
  std::size_t offset = 0;     // from the region's base
  std::size_t size = 0;
  bool in_use = false;
  std::size_t requested = 0;  // what the caller asked for (in use only)
  std::size_t committed = 0;  // bytes of it backed by memory (== size unless expandable)
};

// One region from the source, its chunks in address order (torch.cuda.memory_snapshot()'s
// segments).
struct ArenaSegment {
  std::uintptr_t base = 0;
  std::size_t size = 0;
  std::vector<ArenaBlock> blocks;
};

// A best-fit-with-coalescing arena with ONNX Runtime BFCArena semantics (256 B rounding,
// 21 power-of-two bins ordered by (size, address), split rule, immediate coalescing,
// kNextPowerOfTwo / kSameAsRequested growth with 0.9x backoff), plus: any power-of-two
// alignment, merging of adjacent regions when the source allows it, release of fully
// free regions (ReleaseUnusedSpans at any time; automatically before crossing max_mem or
// when the source refuses), and stream-ordered reuse when given a StreamFence.
// With ArenaConfig::expandable_segments the source must be a VirtualMemorySource: held is
// then committed memory. Commits happen only on the allocation path when memory must be
// added; decommits there, in ReleaseUnusedSpans, and in the one Deallocate in 2048 that ends
// a decommit epoch (expandable_decommit_threshold).
// Thread-safe: one mutex; every call costs O(log n) plus, on growth, source calls.
class BfcArena final : public Allocator {
 public:
  // Throws ConfigError when `config` is invalid or asks for expandable_segments over a source
  // that is not a VirtualMemorySource, std::invalid_argument when `source` is null.
  explicit BfcArena(std::shared_ptr<MemorySource> source, ArenaConfig config = {},
                    std::shared_ptr<StreamFence> fence = nullptr);
  // Gives every region back to the source, also those with chunks still in use (as ORT).
  ~BfcArena() override;
  BfcArena(const BfcArena&) = delete;
  BfcArena& operator=(const BfcArena&) = delete;

  // Allocate, TryAllocate, Deallocate, UsableSize and GetStats are the base's (as ORT,
  // Alloc(0) gives nullptr). UsableSize is the chunk's size (the request rounded up to
  // 256 B, or the whole chunk when not split). Deallocate frees on the stream the chunk was
  // allocated on. A pointer that is not a live chunk start goes to on_invalid_free.
  // Stream-ordered use (TryAllocateOnStream, DeallocateOnStream): a chunk freed on stream A
  // is handed to stream B only once the fence says the work queued on A before the free has
  // completed; stream A reuses it at once. Without a fence, streams are ignored.
  void ResetPeakStats() override;
  // ORT's Shrink: gives back every region with nothing in use (under kNextPowerOfTwo the
  // first region stays) and restarts growth from initial_growth_chunk_size_bytes. Safe at
  // any time, also while other chunks are in use. An expandable arena also decommits every
  // free granule. Returns the bytes given back.
  std::size_t ReleaseUnusedSpans() override;
  // ReleaseUnusedSpans without keeping the first region: every region with nothing in use
  // goes (torch.cuda.empty_cache() semantics). Returns the bytes given back.
  std::size_t ReleaseAllUnusedRegions();
  AllocatorKind kind() const noexcept override;
  std::string_view name() const noexcept override;
  // Names which ORT limit was hit ("Available memory of X is smaller than requested bytes
  // of Y" for max_mem, "Failed to allocate memory for requested buffer of size Y" when the
  // source refused; for an expandable arena also when its virtual reservation ran out) and
  // which knob helps.
  std::string DescribeFailure(std::size_t bytes, std::size_t alignment) const override;

  // memarena::SetWatermarks' contract against this arena's max_mem (no max_mem, no
  // crossings): the callback runs once per upward crossing of held bytes over each level,
  // in order, re-arming after held fell below level - hysteresis. Checked only when an
  // operation changed held (a growth, a release, a decommit), after the arena's lock is
  // released, on the thread of that operation; the callback may use the arena. Throws
  // std::invalid_argument naming a level outside (0, 1] or a hysteresis outside [0, 1).
  void SetWatermarks(std::vector<double> levels, WatermarkCallback callback,
                     double hysteresis = kDefaultWatermarkHysteresis);

  // The size the caller asked for at `ptr` (ORT's RequestedSize); 0 for nullptr.
  std::size_t RequestedSize(const void* ptr) const noexcept;

  // Every region and its chunks now, regions by address: what a memory map draws. Locks;
  // costs one pass over the chunks and one vector each.
  std::vector<ArenaSegment> Segments() const;

  const ArenaConfig& config() const noexcept;
  MemorySource& source() const noexcept;

  // Walks every chunk under the arena's lock and checks the chunk and region invariants and
  // the in-use counters against them. nullptr when they hold, else what is broken. Costs a
  // pass over every chunk: for tests, fuzzers and debugging, not for a hot path.
  const char* CheckInvariants() const noexcept;

 private:
  // Counts its own failures (num_ooms) and records why for DescribeFailure; never throws.
  void* DoAllocate(std::size_t bytes, std::size_t alignment, StreamHandle stream) noexcept override;
  // kNotOwned unless `ptr` starts a live chunk; kAllocationStream frees on the chunk's stream.
  FreeResult DoDeallocate(void* ptr, StreamHandle stream) noexcept override;
  std::size_t DoUsableSize(const void* ptr) const noexcept override;
  AllocatorStats DoGetStats() const override;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memarena
