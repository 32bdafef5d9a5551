// libFuzzer harness: a BfcArena with a random ArenaConfig over a simulated source that
// fails on demand, then a sequence of allocate / free / release / source-failure operations.
// The simulated source hands out addresses, not memory, so overlap is checked on the
// intervals [ptr, ptr + usable size). Invariants: no overlap, usable size >= request,
// alignment holds, held <= max_mem, the source holds exactly what the arena says it holds,
// and after freeing everything nothing is in use.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <vector>

#include "arena/simulated_memory_source.h"
#include "fuzz/fuzz_input.h"
#include "memarena/arena.h"

namespace {

using memarena::fuzz::Check;
using memarena::fuzz::FuzzInput;

// Live blocks by start address, with their end: overlap is a neighbour reaching past a start.
using Intervals = std::map<std::uintptr_t, std::uintptr_t>;

void InsertDisjoint(Intervals& live, std::uintptr_t start, std::uintptr_t end) {
  const auto next = live.lower_bound(start);
  Check(next == live.end() || next->first >= end, "a block overlaps the next live block");
  if (next != live.begin()) {
    Check(std::prev(next)->second <= start, "a block overlaps the previous live block");
  }
  live.emplace(start, end);
}

memarena::ArenaConfig RandomConfig(FuzzInput& in) {
  memarena::ArenaConfig c;
  c.arena_extend_strategy = in.Byte() % 2 == 0 ? memarena::ArenaExtendStrategy::kNextPowerOfTwo
                                               : memarena::ArenaExtendStrategy::kSameAsRequested;
  c.max_mem = in.Byte() % 2 == 0 ? 0 : (std::size_t{1} << (12 + in.Below(16)));
  c.initial_chunk_size_bytes = std::size_t{1} << in.Below(28);
  c.max_dead_bytes_per_chunk = std::size_t{1} << in.Below(28);
  c.initial_growth_chunk_size_bytes = std::size_t{1} << in.Below(28);
  c.max_power_of_two_extend_bytes = std::size_t{256} << in.Below(20);
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzInput in(data, size);
  const memarena::ArenaConfig config = RandomConfig(in);
  memarena::arena::SimulatedMemorySource::Options options;
  options.alignment = std::size_t{256} << in.Below(4);
  options.contiguous = in.Byte() % 2 == 0;
  options.capacity = in.Byte() % 2 == 0 ? 0 : (std::size_t{1} << (16 + in.Below(12)));
  auto source = std::make_shared<memarena::arena::SimulatedMemorySource>(options);
  memarena::BfcArena arena(source, config);
  Intervals live;
  std::vector<std::uintptr_t> order;  // live starts, for picking one to free
  while (!in.Empty() && memarena::fuzz::CountOperation() && order.size() < 512) {
    const std::uint32_t op = in.Below(12);
    if (op < 6) {
      const std::size_t bytes = in.Below(4) == 0 ? in.U32() % (8u << 20) : in.Below(8192);
      const std::size_t alignment = std::size_t{1} << in.Below(13);
      void* p = arena.TryAllocate(bytes, alignment);
      if (p == nullptr) continue;
      const auto start = reinterpret_cast<std::uintptr_t>(p);
      const std::size_t usable = arena.UsableSize(p);
      Check(start % alignment == 0, "misaligned block");
      Check(usable >= bytes, "usable size below the request");
      InsertDisjoint(live, start, start + usable);
      order.push_back(start);
    } else if (op < 9 && !order.empty()) {
      const std::size_t i = in.Below(static_cast<std::uint32_t>(order.size()));
      arena.Deallocate(reinterpret_cast<void*>(order[i]));
      live.erase(order[i]);
      order[i] = order.back();
      order.pop_back();
    } else if (op == 9) {
      arena.ReleaseUnusedSpans();
    } else if (op == 10) {
      source->FailNext(in.Below(4));
    } else {
      source->ClearFailures();
    }
    const memarena::AllocatorStats s = arena.GetStats();
    Check(config.max_mem == 0 || s.bytes_held <= config.max_mem, "held crossed max_mem");
    Check(source->held() == s.bytes_held, "the source and the arena disagree on held bytes");
    Check(s.bytes_in_use <= s.bytes_held, "in use above held");
    Check(arena.CheckInvariants() == nullptr, "chunk or counter invariants broken");
  }
  for (std::uintptr_t start : order) arena.Deallocate(reinterpret_cast<void*>(start));
  const memarena::AllocatorStats s = arena.GetStats();
  Check(s.bytes_in_use == 0 && s.bytes_requested == 0, "bytes in use after freeing everything");
  Check(s.num_allocs == s.num_frees, "allocations and frees do not balance");
  return 0;
}
