// Issue 17: when operator new fails inside BfcArena::TryAllocate (its chunk records and free
// bins live on the host heap, e.g. under a drop-in ceiling) the noexcept call used to end in
// std::terminate. Now it returns nullptr and counts an OOM, and frees never throw. This
// binary replaces operator new with one that fails on demand.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "arena/simulated_memory_source.h"
#include "memarena/arena.h"

namespace {
std::atomic<bool> g_refuse_new{false};
}  // namespace

// The replacement pairs malloc with free on purpose; g++ cannot see that new and delete
// here are the replaceable pair.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t bytes) {
  if (g_refuse_new.load(std::memory_order_relaxed)) throw std::bad_alloc();
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace memarena {
namespace {

// Refuses every operator new while alive.
struct RefuseNew {
  RefuseNew() { g_refuse_new.store(true); }
  ~RefuseNew() { g_refuse_new.store(false); }
};

TEST(ArenaMetadataFailure, TryAllocateReturnsNullAndCountsAnOomInsteadOfTerminating) {
  // The mmap source allocates nothing itself (the simulated one keeps a std::map).
  auto source = std::make_shared<HostMemorySource>();
  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  BfcArena arena(source, config);
  std::vector<void*> blocks;
  blocks.reserve(20000);
  std::size_t refused = 0;
  {
    RefuseNew refuse;
    // Enough distinct allocations that the chunk records, the address map and the bins
    // must grow (each new region is an extension with its own record and map node).
    for (int i = 0; i < 20000; ++i) {
      void* p = arena.TryAllocate(256 + static_cast<std::size_t>(i % 7) * 4096);
      if (p == nullptr) {
        ++refused;
      } else {
        blocks.push_back(p);
      }
    }
    // Frees while operator new fails: never throw, never terminate.
    for (std::size_t i = 0; i < blocks.size(); i += 2) arena.Deallocate(blocks[i]);
  }
  EXPECT_EQ(refused, 20000u) << "the first allocation needs a region record, refused";
  EXPECT_EQ(arena.GetStats().num_ooms, refused);
  for (std::size_t i = 1; i < blocks.size(); i += 2) arena.Deallocate(blocks[i]);
  blocks.clear();
  // With operator new back, the arena works and its books balance.
  for (int i = 0; i < 1000; ++i) {
    blocks.push_back(arena.Allocate(256 + static_cast<std::size_t>(i % 7) * 4096));
  }
  EXPECT_GT(arena.GetStats().bytes_in_use, 0u);
  // Half of them freed: requests can then be served from free chunks with no new region.
  std::vector<void*> kept;
  kept.reserve(blocks.capacity());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (i % 2 == 0) {
      arena.Deallocate(blocks[i]);
    } else {
      kept.push_back(blocks[i]);
    }
  }
  blocks.swap(kept);
  std::size_t served = 0;
  {
    RefuseNew refuse;
    for (int i = 0; i < 20000 && blocks.size() < blocks.capacity(); ++i) {
      if (void* p = arena.TryAllocate(256)) {
        ++served;
        blocks.push_back(p);
      }
    }
    for (void* p : blocks) arena.Deallocate(p);
  }
  EXPECT_GT(served, 0u) << "the bookkeeping reserved ahead serves some requests";
  const AllocatorStats s = arena.GetStats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.num_allocs, s.num_frees);
  EXPECT_GT(s.num_ooms, refused);
  std::string message;
  void* huge = nullptr;
  {
    RefuseNew refuse;
    huge = arena.TryAllocate(std::size_t{1} << 30);  // needs a region record: refused
  }
  EXPECT_EQ(huge, nullptr);
  message = arena.DescribeFailure(std::size_t{1} << 30, alignof(std::max_align_t));
  EXPECT_NE(message.find("bookkeeping"), std::string::npos) << message;
}

TEST(ArenaMetadataFailure, SimulatedSourceRefusesInsteadOfTerminatingWhenItsBooksCannotGrow) {
  // Reserve and Release are noexcept but keep a std::map and a call log: a failing
  // operator new used to end in std::terminate there.
  arena::SimulatedMemorySource source;
  void* kept = source.Reserve(4096);
  ASSERT_NE(kept, nullptr);
  void* refused = reinterpret_cast<void*>(1);
  {
    RefuseNew refuse;
    refused = source.Reserve(4096);
    source.Release(kept, 4096);
  }
  EXPECT_EQ(refused, nullptr);
  EXPECT_EQ(source.num_failed_reserves(), 1u);
  EXPECT_EQ(source.held(), 0u) << "the release under failing operator new still balanced the books";
  EXPECT_EQ(source.num_bad_releases(), 0u);
  EXPECT_GE(source.num_unrecorded_calls(), 1u);
  EXPECT_NE(source.Reserve(4096), nullptr) << "with operator new back the source serves again";
}

}  // namespace
}  // namespace memarena
