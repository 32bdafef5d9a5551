// Every allocation entry point of the host heap hands the sampler a stack that starts in its
// caller: the heap's own frames (what an entry point calls, tail-calls or inlines) lie in the
// allocation-entry section and are dropped, so a heap profile's top frame is the program's.
// Each caller below allocates through one entry point with every allocation sampled.
#include <gtest/gtest.h>

#include <cstdint>
#include <new>

#include "host/heap_sampler.h"
#include "host/host_api.h"
#include "memarena/memarena.h"

namespace {

namespace host = memarena::host;
namespace sampler = memarena::host::sampler;

using Caller = void* (*)(std::size_t bytes);

// Each caller is noinline and stores the block after the call, so the call is no tail call
// and the caller keeps a frame of its own; built with frame pointers like the library.
constexpr std::uintptr_t kCallerBytes = 512;
void* volatile g_last = nullptr;

void* Kept(void* block) {
  g_last = block;
  return block;
}

void* ReturnNull(std::size_t, std::size_t) noexcept { return nullptr; }
void* Throw(std::size_t, std::size_t) { throw std::bad_alloc(); }
void* NoGeneralPath(void*, std::size_t) noexcept { return nullptr; }

[[gnu::noinline]] void* ThroughAllocate(std::size_t bytes) {
  return Kept(host::Allocate(bytes, 16));
}
[[gnu::noinline]] void* ThroughAllocateOr(std::size_t bytes) {
  return Kept(host::AllocateOr(bytes, 64, &ReturnNull));
}
[[gnu::noinline]] void* ThroughAllocateOrThrow(std::size_t bytes) {
  return Kept(host::AllocateOrThrow(bytes, 64, &Throw));
}
[[gnu::noinline]] void* ThroughAllocateMinAlignedOr(std::size_t bytes) {
  return Kept(host::AllocateMinAlignedOr(bytes, &ReturnNull));
}
[[gnu::noinline]] void* ThroughAllocateMinAlignedOrThrow(std::size_t bytes) {
  return Kept(host::AllocateMinAlignedOrThrow(bytes, &Throw));
}
[[gnu::noinline]] void* ThroughAllocateIfAvailable(std::size_t bytes) {
  return Kept(host::AllocateIfAvailable(bytes, 16));
}
[[gnu::noinline]] void* ThroughHostAllocator(std::size_t bytes) {
  return Kept(memarena::HostAllocator().Allocate(bytes));
}
// realloc's one-lookup move of a small block (MoveSmall): the old block is allocated first,
// and only its move is sampled.
void* g_small_block = nullptr;
[[gnu::noinline]] void* ThroughReallocateOr(std::size_t bytes) {
  return Kept(host::ReallocateOr(g_small_block, bytes, &NoGeneralPath));
}

struct Entry {
  const char* name;
  Caller call;
};
constexpr Entry kEntries[] = {
    {"Allocate", &ThroughAllocate},
    {"AllocateOr", &ThroughAllocateOr},
    {"AllocateOrThrow", &ThroughAllocateOrThrow},
    {"AllocateMinAlignedOr", &ThroughAllocateMinAlignedOr},
    {"AllocateMinAlignedOrThrow", &ThroughAllocateMinAlignedOrThrow},
    {"AllocateIfAvailable", &ThroughAllocateIfAvailable},
    {"HostAllocator().Allocate", &ThroughHostAllocator},
};

bool Within(const void* pc, Caller caller) {
  const auto start = reinterpret_cast<std::uintptr_t>(caller);
  const auto address = reinterpret_cast<std::uintptr_t>(pc);
  return address > start && address < start + kCallerBytes;
}

// The first frame of `block`'s sample; nullptr when the block was not sampled.
const void* FirstFrameOf(const void* block) {
  for (const sampler::Sample& s : sampler::Snapshot()) {
    if (s.ptr == block) return s.depth != 0 ? s.frames[0] : nullptr;
  }
  return nullptr;
}

// Every allocation sampled; the first allocations notice the new interval (see
// heap_sampler_test.cc's EverySampled).
void SampleEveryAllocation() {
  memarena::SetHeapSampleInterval(1);
  host::Free(host::Allocate(16, 16));
  host::Free(host::Allocate(std::size_t{1} << 20, 16));
}

TEST(SampledStack, EveryEntryPointStartsInItsCaller) {
  SampleEveryAllocation();
  // A small class's size (the fast path's list hands it on), a large class's, and a page run.
  for (const std::size_t bytes : {std::size_t{48}, std::size_t{3000}, std::size_t{200000}}) {
    for (const Entry& entry : kEntries) {
      void* block = entry.call(bytes);
      ASSERT_NE(block, nullptr) << entry.name;
      const void* first = FirstFrameOf(block);
      EXPECT_TRUE(Within(first, entry.call))
          << entry.name << " of " << bytes << " B: the stack starts at " << first
          << ", not in the caller at " << reinterpret_cast<const void*>(entry.call);
      host::Free(block);
    }
  }
  memarena::SetHeapSampleInterval(0);
}

TEST(SampledStack, ASmallBlocksMoveStartsInTheReallocCaller) {
  g_small_block = host::Allocate(100, 16);  // not sampled: a class object, which moves
  SampleEveryAllocation();
  void* moved = ThroughReallocateOr(1000);
  ASSERT_NE(moved, nullptr);
  ASSERT_NE(moved, g_small_block);
  const void* first = FirstFrameOf(moved);
  EXPECT_TRUE(Within(first, &ThroughReallocateOr)) << "the stack starts at " << first;
  memarena::SetHeapSampleInterval(0);
  host::Free(moved);
}

}  // namespace
