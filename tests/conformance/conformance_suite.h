// The typed conformance suite every memarena::Allocator passes (after RMM's typed
// resource tests). Instantiate it with a factory type F that provides:
//
//   static std::shared_ptr<memarena::Allocator> Make(std::size_t limit_bytes);
//       A ready allocator whose held bytes are limited to limit_bytes (0 = no limit).
//       It may be a shared instance: the suite frees everything it allocates.
//   static constexpr std::size_t kMaxAlignment;   // largest alignment to test (<= 1 MiB)
//   static constexpr bool kHasLimit;              // false skips out-of-memory-then-recover
//   static constexpr bool kAddressable;           // false: memory is not readable from the
//                                                 // CPU (device, simulated); no fill/verify
//
// and then:  INSTANTIATE_TYPED_TEST_SUITE_P(MyAllocator, AllocatorConformance,
//                                          ::testing::Types<MyFactory>);
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "memarena/memarena.h"

namespace memarena::testing {

template <typename F>
class AllocatorConformance : public ::testing::Test {
 protected:
  static std::uint8_t Pattern(std::uintptr_t id, std::size_t i) {
    return static_cast<std::uint8_t>((id * 131u + i * 7u) & 0xff);
  }
  static void Fill(void* p, std::size_t n, std::uintptr_t id) {
    auto* b = static_cast<std::uint8_t*>(p);
    for (std::size_t i = 0; i < n; ++i) b[i] = Pattern(id, i);
  }
  static bool Verify(const void* p, std::size_t n, std::uintptr_t id) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    for (std::size_t i = 0; i < n; ++i) {
      if (b[i] != Pattern(id, i)) return false;
    }
    return true;
  }
};

TYPED_TEST_SUITE_P(AllocatorConformance);

TYPED_TEST_P(AllocatorConformance, ZeroSizeIsNullOrUniqueAndFreeable) {
  auto alloc = TypeParam::Make(0);
  void* a = alloc->Allocate(0);
  void* b = alloc->Allocate(0);
  if (a != nullptr && b != nullptr) {
    EXPECT_NE(a, b);
  }
  void* c = alloc->TryAllocate(0);
  alloc->Deallocate(a);
  alloc->Deallocate(b);
  alloc->Deallocate(c);
  alloc->Deallocate(nullptr);  // a no-op
  EXPECT_EQ(alloc->UsableSize(nullptr), 0u);
}

TYPED_TEST_P(AllocatorConformance, EveryPowerOfTwoAlignmentIsHonoured) {
  auto alloc = TypeParam::Make(0);
  for (std::size_t align = 1; align <= TypeParam::kMaxAlignment; align *= 2) {
    for (std::size_t bytes : {std::size_t{1}, align, align + align / 2 + 1}) {
      void* p = alloc->Allocate(bytes, align);
      ASSERT_NE(p, nullptr) << "bytes " << bytes << " align " << align;
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u)
          << "bytes " << bytes << " align " << align;
      const std::size_t usable = alloc->UsableSize(p);
      EXPECT_GE(usable, bytes);
      if (TypeParam::kAddressable) {
        this->Fill(p, usable, align);
        EXPECT_TRUE(this->Verify(p, usable, align));
      }
      alloc->Deallocate(p);
    }
  }
}

TYPED_TEST_P(AllocatorConformance, BadAlignmentIsAClearError) {
  auto alloc = TypeParam::Make(0);
  EXPECT_THROW(alloc->Allocate(64, 3), std::invalid_argument);
  EXPECT_THROW(alloc->Allocate(64, 0), std::invalid_argument);
  EXPECT_EQ(alloc->TryAllocate(64, 48), nullptr);
}

TYPED_TEST_P(AllocatorConformance, UsableSizeCoversTheRequest) {
  auto alloc = TypeParam::Make(0);
  std::mt19937_64 rng(7);
  std::vector<std::pair<void*, std::size_t>> live;
  for (int i = 0; i < 2000; ++i) {
    const std::size_t bytes = 1 + rng() % (i % 50 == 0 ? (4u << 20) : 4096u);
    void* p = alloc->Allocate(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_GE(alloc->UsableSize(p), bytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % kDefaultAlignment, 0u);
    live.emplace_back(p, bytes);
  }
  for (auto& [p, bytes] : live) alloc->Deallocate(p);
}

TYPED_TEST_P(AllocatorConformance, RandomWorkloadKeepsEveryByte) {
  auto alloc = TypeParam::Make(0);
  constexpr bool host = TypeParam::kAddressable;
  const AllocatorStats before = alloc->GetStats();
  std::mt19937_64 rng(42);
  struct Block {
    std::uint8_t* p;
    std::size_t n;
    std::uintptr_t id;
  };
  std::vector<Block> live;
  std::uintptr_t next_id = 1;
  for (int op = 0; op < 20000; ++op) {
    if (live.empty() || rng() % 100 < 55) {
      const unsigned shift = static_cast<unsigned>(rng() % 17);  // up to 128 KiB, log-uniform
      const std::size_t n = 1 + rng() % (std::size_t{1} << shift);
      auto* p = static_cast<std::uint8_t*>(alloc->Allocate(n));
      ASSERT_NE(p, nullptr);
      if (host) this->Fill(p, n, next_id);
      live.push_back({p, n, next_id++});
    } else {
      const std::size_t i = rng() % live.size();
      if (host) {
        ASSERT_TRUE(this->Verify(live[i].p, live[i].n, live[i].id)) << "block corrupted";
      }
      alloc->Deallocate(live[i].p);
      live[i] = live.back();
      live.pop_back();
    }
    if (op % 5000 == 4999) {  // no two live blocks overlap
      std::vector<Block> sorted = live;
      std::sort(sorted.begin(), sorted.end(), [](const Block& a, const Block& b) { return a.p < b.p; });
      for (std::size_t i = 1; i < sorted.size(); ++i) {
        ASSERT_LE(sorted[i - 1].p + sorted[i - 1].n, sorted[i].p) << "live blocks overlap";
      }
    }
  }
  for (const Block& b : live) {
    if (host) {
      ASSERT_TRUE(this->Verify(b.p, b.n, b.id));
    }
    alloc->Deallocate(b.p);
  }
  const AllocatorStats after = alloc->GetStats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use) << "in-use bytes leaked";
  EXPECT_GT(after.num_allocs, before.num_allocs);
  EXPECT_EQ(after.num_allocs - before.num_allocs, after.num_frees - before.num_frees);
}

TYPED_TEST_P(AllocatorConformance, CrossThreadFreesAreAccounted) {
  auto alloc = TypeParam::Make(0);
  const AllocatorStats before = alloc->GetStats();
  constexpr int kRounds = 4;
  constexpr int kPerRound = 5000;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<void*> blocks(kPerRound);
    std::thread producer([&] {
      for (int i = 0; i < kPerRound; ++i) {
        blocks[i] = alloc->Allocate(static_cast<std::size_t>(16 + (i % 64) * 24));
        if (TypeParam::kAddressable) std::memset(blocks[i], 0xab, 16);
      }
    });
    producer.join();
    std::thread consumer([&] {
      for (void* p : blocks) alloc->Deallocate(p);
    });
    consumer.join();
  }
  const AllocatorStats after = alloc->GetStats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.num_allocs - before.num_allocs,
            static_cast<std::uint64_t>(kRounds) * kPerRound);
  EXPECT_EQ(after.num_frees - before.num_frees, static_cast<std::uint64_t>(kRounds) * kPerRound);
}

TYPED_TEST_P(AllocatorConformance, ConcurrentAllocateAndFree) {
  auto alloc = TypeParam::Make(0);
  std::atomic<bool> failed{false};
  auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::pair<std::uint8_t*, std::size_t>> mine;
    for (int i = 0; i < 20000; ++i) {
      if (mine.empty() || rng() % 2 == 0) {
        const std::size_t n = 1 + rng() % 2048;
        auto* p = static_cast<std::uint8_t*>(alloc->Allocate(n));
        if (TypeParam::kAddressable) std::memset(p, static_cast<int>(seed), n);
        mine.emplace_back(p, n);
      } else {
        auto [p, n] = mine.back();
        mine.pop_back();
        if (TypeParam::kAddressable &&
            (p[0] != static_cast<std::uint8_t>(seed) || p[n - 1] != static_cast<std::uint8_t>(seed))) {
          failed = true;
        }
        alloc->Deallocate(p);
      }
    }
    for (auto [p, n] : mine) alloc->Deallocate(p);
  };
  std::thread a(worker, 1u), b(worker, 2u);
  a.join();
  b.join();
  EXPECT_FALSE(failed.load()) << "a block was overwritten by the other thread";
}

TYPED_TEST_P(AllocatorConformance, OutOfMemoryExplainsItselfThenRecovers) {
  if constexpr (!TypeParam::kHasLimit) {
    GTEST_SKIP() << "this allocator has no limit to reach";
  } else {
    constexpr std::size_t kLimit = 64u << 20;
    auto alloc = TypeParam::Make(kLimit);
    const std::uint64_t ooms_before = alloc->GetStats().num_ooms;
    void* keep = alloc->Allocate(1u << 20);
    try {
      alloc->Allocate(2 * kLimit);
      FAIL() << "a request of twice the limit succeeded";
    } catch (const OutOfMemory& e) {
      const std::string what = e.what();
      for (const char* word : {"in use", "held", "limit", "releasable"}) {
        EXPECT_NE(what.find(word), std::string::npos) << "message lacks '" << word << "': " << what;
      }
    }
    EXPECT_THROW(alloc->Allocate(2 * kLimit), std::bad_alloc);
    EXPECT_EQ(alloc->TryAllocate(2 * kLimit), nullptr);
    EXPECT_GE(alloc->GetStats().num_ooms, ooms_before + 3);
    // The allocator keeps working after the failures.
    std::vector<void*> small;
    for (int i = 0; i < 16; ++i) small.push_back(alloc->Allocate(1u << 20));
    for (void* p : small) alloc->Deallocate(p);
    alloc->Deallocate(keep);
    EXPECT_LE(alloc->GetStats().peak_bytes_held, kLimit);
  }
}

REGISTER_TYPED_TEST_SUITE_P(AllocatorConformance, ZeroSizeIsNullOrUniqueAndFreeable,
                            EveryPowerOfTwoAlignmentIsHonoured, BadAlignmentIsAClearError,
                            UsableSizeCoversTheRequest, RandomWorkloadKeepsEveryByte,
                            CrossThreadFreesAreAccounted, ConcurrentAllocateAndFree,
                            OutOfMemoryExplainsItselfThenRecovers);

}  // namespace memarena::testing
