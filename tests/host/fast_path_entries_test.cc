// The drop-in's two shortcuts into the host heap: FreeSized (the sized operator delete, whose
// list comes from the size) must free exactly what Free would and catch what Free catches,
// whatever size it is given; AllocateOr / AllocateOrThrow hand a failure to the caller's
// path instead of returning nullptr; ReallocateOr moves a small block on one lookup and hands
// every other case to realloc's general path with the block untouched.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "host/heap.h"
#include "host/host_api.h"
#include "host/size_classes.h"
#include "memarena/allocator.h"
#include "reported_frees.h"

namespace memarena::host {
namespace {

constexpr std::size_t kSizes[] = {1, 16, 48, 96, 200, 1000, 5000, 70000, 262144};

class SizedFree : public ReportedFrees {};

// The freed block lands on its own class's list (the next allocation of that class takes it
// back) and no other list grows.
TEST_F(SizedFree, PutsTheBlockOnItsClassListLikeFree) {
  for (std::size_t bytes : kSizes) {
    const std::size_t cls = ClassFor(bytes);
    void* p = Allocate(bytes, 0);
    ASSERT_NE(p, nullptr);
    const std::size_t cached = CallingThreadCachedObjects(cls);
    FreeSized(p, bytes);
    if (CallingThreadCachedObjects(cls) == cached + 1) {  // kept (not handed on by an overflow)
      EXPECT_EQ(Allocate(bytes, 0), p) << bytes;
      FreeSized(p, bytes);
    }
  }
  EXPECT_EQ(Reported(), 0u);
}

// A size of another class (a wrong size, or an aligned block whose class is bigger than its
// size) must not put the block on that class's list: it is freed by its pagemap entry. The
// power-of-two pairs pass the other class's object-start test (page-aligned spans), so only
// the class test catches them. The largest pairs stay within kMaxClassRequest: a page run
// freed with a wrong size goes back to the page heap, where any request may take it next.
TEST_F(SizedFree, AWrongSizeFreesTheBlockByItsRealClass) {
  const std::pair<std::size_t, std::size_t> kWrong[] = {
      {32, 16}, {16, 32}, {64, 128}, {256, 64}, {4096, 8192}, {1, 600}, {96, 80},
      {200, 700}, {1000, 1500}, {5000, 2500}, {60000, 30000}, {65536, 32768}};
  for (const auto& [bytes, wrong_bytes] : kWrong) {
    const std::size_t cls = ClassFor(bytes);
    const std::size_t wrong_cls = ClassFor(wrong_bytes);
    ASSERT_NE(wrong_cls, cls);
    void* p = Allocate(bytes, 0);
    ASSERT_NE(p, nullptr);
    const std::size_t wrong_cached = CallingThreadCachedObjects(wrong_cls);
    const std::size_t cached = CallingThreadCachedObjects(cls);
    FreeSized(p, wrong_bytes);
    EXPECT_EQ(CallingThreadCachedObjects(wrong_cls), wrong_cached) << bytes;
    void* of_wrong_class = Allocate(wrong_bytes, 0);
    EXPECT_NE(of_wrong_class, p) << bytes << ": handed out as a block of " << wrong_bytes;
    Free(of_wrong_class);
    EXPECT_LE(CallingThreadCachedObjects(cls), cached + 1) << bytes;
    EXPECT_EQ(UsableSize(p), 0u) << bytes << ": the block is still live";
  }
  void* aligned = Allocate(64, 256);
  ASSERT_NE(aligned, nullptr);
  FreeSized(aligned, 64);
  EXPECT_EQ(UsableSize(aligned), 0u);
  EXPECT_EQ(Reported(), 0u);
}

TEST_F(SizedFree, LargeBlocksAndNullGoThroughFree) {
  void* big = Allocate(std::size_t{1} << 20, 0);
  void* other = Allocate(std::size_t{1} << 20, 0);
  ASSERT_TRUE(big != nullptr && other != nullptr);
  FreeSized(big, std::size_t{1} << 20);
  FreeSized(other, 64);  // a small size for a large block
  EXPECT_EQ(UsableSize(big), 0u);
  EXPECT_EQ(UsableSize(other), 0u);
  FreeSized(nullptr, 64);
  FreeSized(nullptr, std::size_t{1} << 20);
  EXPECT_EQ(Reported(), 0u);
}

TEST_F(SizedFree, DoubleFreesAreCaughtWithTheRightOrAWrongSize) {
  for (std::size_t bytes : kSizes) {
    void* a = Allocate(bytes, 0);
    void* b = Allocate(bytes, 0);
    ASSERT_TRUE(a != nullptr && b != nullptr);
    FreeSized(a, bytes);
    FreeSized(b, bytes);
    const std::uint64_t before = Reported();
    ::testing::internal::CaptureStderr();
    FreeSized(a, bytes);  // no longer the list's head: the mark tells
    FreeSized(b, bytes + 4096);
    FlushThreadCache();
    FreeSized(a, bytes);  // now in the central lists
    const std::string message = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(Reported(), before + 3) << bytes << ": " << message;
    EXPECT_NE(message.find("double free"), std::string::npos) << bytes << ": " << message;
    void* first = Allocate(bytes, 0);
    void* second = Allocate(bytes, 0);
    EXPECT_NE(first, second) << bytes << ": a block was handed out twice";
    FreeSized(first, bytes);
    FreeSized(second, bytes);
    EXPECT_EQ(Reported(), before + 3) << bytes << ": a legitimate free was reported";
  }
}

TEST_F(SizedFree, InteriorAndForeignPointersAreCaught) {
  auto* q = static_cast<char*>(Allocate(96, 0));
  ASSERT_NE(q, nullptr);
  int on_stack = 0;
  ::testing::internal::CaptureStderr();
  FreeSized(q + 16, 80);
  FreeSized(q + 16, 96);
  FreeSized(&on_stack, sizeof on_stack);
  const std::string message = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Reported(), 3u) << message;
  EXPECT_NE(message.find("invalid free"), std::string::npos) << message;
  void* next = Allocate(96, 0);
  EXPECT_NE(next, q + 16) << "a block inside a live block was handed out";
  FreeSized(next, 96);
  FreeSized(q, 96);
  EXPECT_EQ(Reported(), 3u);
}

// A thread's first call may be a sized free, with no cache yet (the static empty cache's
// start tests fail and the slow path frees).
TEST_F(SizedFree, AThreadWithoutACacheFreesAndCatchesDoubleFrees) {
  void* live = Allocate(96, 0);
  void* freed = Allocate(96, 0);
  ASSERT_TRUE(live != nullptr && freed != nullptr);
  FreeSized(freed, 96);
  ::testing::internal::CaptureStderr();
  std::thread([&] {
    FreeSized(live, 96);
    FreeSized(live, 96);
  }).join();
  std::thread([&] { FreeSized(freed, 96); }).join();
  const std::string message = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Reported(), 2u) << message;
  EXPECT_EQ(UsableSize(live), 0u);
}

constexpr std::size_t kRefused = std::size_t{1} << 60;  // more than the 48-bit heap can map

std::size_t g_failed_bytes = 0;
std::size_t g_failed_alignment = 0;
int g_fallback = 0;

void* RecordFailure(std::size_t bytes, std::size_t alignment) noexcept {
  g_failed_bytes = bytes;
  g_failed_alignment = alignment;
  return &g_fallback;
}

void* ThrowOnFailure(std::size_t bytes, std::size_t) { throw std::length_error(std::to_string(bytes)); }

TEST(AllocateOr, CallsTheFailurePathWithTheRequestAndReturnsItsResult) {
  EXPECT_EQ(AllocateOr(kRefused, 64, &RecordFailure), &g_fallback);
  EXPECT_EQ(g_failed_bytes, kRefused);
  EXPECT_EQ(g_failed_alignment, 64u);
  g_failed_bytes = 0;
  void* p = AllocateOr(96, 16, &RecordFailure);
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p, &g_fallback);
  EXPECT_EQ(g_failed_bytes, 0u) << "called on success";
  EXPECT_GE(UsableSize(p), 96u);
  FreeSized(p, 96);
}

TEST(AllocateOr, AThrowingFailurePathThrowsThroughTheHeap) {
  EXPECT_THROW(AllocateOrThrow(kRefused, 16, &ThrowOnFailure), std::length_error);
  void* p = AllocateOrThrow(200, 16, &ThrowOnFailure);
  ASSERT_NE(p, nullptr);
  Free(p);
  EXPECT_EQ(CheckHeap(), nullptr);
}

// The entries without an alignment argument (malloc's and plain operator new's): the same
// failure path, called with the default alignment, and blocks from the thread's lists.
TEST(AllocateMinAlignedOr, CallsTheFailurePathWithTheDefaultAlignment) {
  g_failed_alignment = 0;
  EXPECT_EQ(AllocateMinAlignedOr(kRefused, &RecordFailure), &g_fallback);
  EXPECT_EQ(g_failed_bytes, kRefused);
  EXPECT_EQ(g_failed_alignment, kMinAlign);
  g_failed_bytes = 0;
  for (std::size_t bytes : kSizes) {
    void* p = AllocateMinAlignedOr(bytes, &RecordFailure);
    ASSERT_NE(p, nullptr);
    ASSERT_NE(p, &g_fallback);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % kMinAlign, 0u) << bytes;
    EXPECT_GE(UsableSize(p), bytes);
    Free(p);
  }
  EXPECT_EQ(g_failed_bytes, 0u) << "called on success";
  EXPECT_EQ(CheckHeap(), nullptr);
}

TEST(AllocateMinAlignedOr, TakesTheThreadsCachedBlockAndClearsItsFreedMark) {
  for (int i = 0; i < 64; ++i) Free(Allocate(96, 0));  // the list's bound grows with use
  void* p = Allocate(96, 0);
  ASSERT_NE(p, nullptr);
  const std::size_t cls = ClassFor(96);
  const std::size_t cached = CallingThreadCachedObjects(cls);
  Free(p);
  if (CallingThreadCachedObjects(cls) != cached + 1) GTEST_SKIP() << "the free overflowed";
  EXPECT_EQ(AllocateMinAlignedOrThrow(96, &ThrowOnFailure), p);
  EXPECT_EQ(UsableSize(p), ClassSize(cls)) << "live again: the freed mark is cleared";
  Free(p);  // no double-free report: the allocation cleared the mark
  EXPECT_EQ(UsableSize(p), 0u) << "freed again";
}

TEST(AllocateMinAlignedOr, AThrowingFailurePathThrowsThroughTheHeap) {
  EXPECT_THROW(AllocateMinAlignedOrThrow(kRefused, &ThrowOnFailure), std::length_error);
  void* p = AllocateMinAlignedOrThrow(200, &ThrowOnFailure);
  ASSERT_NE(p, nullptr);
  Free(p);
  EXPECT_EQ(CheckHeap(), nullptr);
}

// realloc's general path, recorded: ReallocateOr must call it with the request as given and
// return its result.
struct GeneralCall {
  int calls = 0;
  void* ptr = nullptr;
  std::size_t bytes = 0;
};
GeneralCall g_general;
char g_general_result;

void* RecordGeneral(void* ptr, std::size_t bytes) noexcept {
  ++g_general.calls;
  g_general.ptr = ptr;
  g_general.bytes = bytes;
  return &g_general_result;
}

void Fill(void* p, std::size_t bytes) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>(i * 7 + 1);
}

::testing::AssertionResult Filled(const void* p, std::size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) {
    if (b[i] != static_cast<unsigned char>(i * 7 + 1)) {
      return ::testing::AssertionFailure() << "byte " << i << " of " << bytes << " changed";
    }
  }
  return ::testing::AssertionSuccess();
}

class Reallocate : public ReportedFrees {
 protected:
  void SetUp() override {
    ReportedFrees::SetUp();
    g_general = {};
  }
};

// The general path's rules on one lookup: kept while it fits and stays half used; moved
// (contents kept, the old block freed onto its class's list) to the exact size when it
// doubles or shrinks below half, and to 1.5x when it grows by less than that.
TEST_F(Reallocate, KeepsOrMovesASmallBlockAsTheGeneralPathWould) {
  void* p = Allocate(100, 0);  // class 112
  ASSERT_NE(p, nullptr);
  Fill(p, 112);
  EXPECT_EQ(ReallocateOr(p, 112, &RecordGeneral), p);
  EXPECT_EQ(ReallocateOr(p, 56, &RecordGeneral), p);

  void* shrunk = ReallocateOr(p, 55, &RecordGeneral);  // below half of 112
  ASSERT_NE(shrunk, p);
  EXPECT_EQ(UsableSize(shrunk), ClassSize(ClassFor(55)));
  EXPECT_TRUE(Filled(shrunk, 55));
  EXPECT_EQ(UsableSize(p), 0u) << "the old block is freed";
  EXPECT_EQ(Allocate(100, 0), p) << "and heads its class's list";
  Free(p);

  void* doubled = ReallocateOr(shrunk, 128, &RecordGeneral);  // 1.5 x 64 < 128: exact
  ASSERT_NE(doubled, shrunk);
  EXPECT_EQ(UsableSize(doubled), 128u);
  EXPECT_TRUE(Filled(doubled, 55));
  EXPECT_EQ(UsableSize(shrunk), 0u);

  Fill(doubled, 128);
  void* roomy = ReallocateOr(doubled, 150, &RecordGeneral);  // 1.5 x 128 = 192 > 150
  ASSERT_NE(roomy, doubled);
  EXPECT_EQ(UsableSize(roomy), 192u);
  EXPECT_TRUE(Filled(roomy, 128));

  void* large = ReallocateOr(roomy, 300000, &RecordGeneral);  // a small block grows large
  ASSERT_NE(large, roomy);
  EXPECT_GE(UsableSize(large), 300000u);
  EXPECT_TRUE(Filled(large, 128));
  const std::size_t large_usable = UsableSize(large);
  EXPECT_EQ(ReallocateOr(large, large_usable, &RecordGeneral), large) << "a large block fits";
  EXPECT_EQ(ReallocateOr(large, large_usable / 2, &RecordGeneral), large);
  Free(large);
  EXPECT_EQ(g_general.calls, 0);
  EXPECT_EQ(Reported(), 0u);
}

// Size 0, a large block that must move, a block of 8 KiB and up (FreeMoved's), freed blocks
// and an interior pointer all go to the general path, with the request unchanged and nothing
// reported or freed: the general path reports or frees, once.
TEST_F(Reallocate, HandsEveryOtherCaseToTheGeneralPathUntouched) {
  void* small = Allocate(200, 0);
  void* large = Allocate(100000, 0);
  void* big_class = Allocate(8192, 0);
  void* freed = Allocate(96, 0);
  void* freed_large = Allocate(300000, 0);
  ASSERT_TRUE(small != nullptr && large != nullptr && big_class != nullptr && freed != nullptr &&
              freed_large != nullptr);
  Free(freed);
  Free(freed_large);
  const std::pair<void*, std::size_t> kGeneral[] = {
      {small, 0},         {large, 0},      {large, 50},         {large, 200000},
      {big_class, 20000}, {big_class, 10}, {freed, 200},        {freed_large, 300000},
      {static_cast<char*>(small) + 16, 300}, {static_cast<char*>(large) + 8192, 1000}};
  for (const auto& [ptr, bytes] : kGeneral) {
    g_general = {};
    EXPECT_EQ(ReallocateOr(ptr, bytes, &RecordGeneral), &g_general_result) << bytes;
    EXPECT_EQ(g_general.calls, 1);
    EXPECT_EQ(g_general.ptr, ptr);
    EXPECT_EQ(g_general.bytes, bytes);
  }
  EXPECT_EQ(Reported(), 0u);
  EXPECT_EQ(UsableSize(small), ClassSize(ClassFor(200))) << "still live";
  EXPECT_EQ(UsableSize(big_class), 8192u);
  EXPECT_GE(UsableSize(large), 100000u);
  Free(small);
  Free(large);
  Free(big_class);
}

// A thread with no cache yet moves a block too: the new block from the slow path, the old
// one to the central lists.
TEST_F(Reallocate, AThreadWithoutACacheMovesABlock) {
  void* p = Allocate(64, 0);
  ASSERT_NE(p, nullptr);
  Fill(p, 64);
  void* moved = nullptr;
  std::thread([&] { moved = ReallocateOr(p, 1000, &RecordGeneral); }).join();
  ASSERT_NE(moved, nullptr);
  ASSERT_NE(moved, &g_general_result);
  EXPECT_TRUE(Filled(moved, 64));
  EXPECT_EQ(UsableSize(p), 0u);
  Free(moved);
  EXPECT_EQ(g_general.calls, 0);
}

}  // namespace
}  // namespace memarena::host
