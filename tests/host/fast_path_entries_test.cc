// The drop-in's two shortcuts into the host heap: FreeSized (the sized operator delete, whose
// list comes from the size) must free exactly what Free would and catch what Free catches,
// whatever size it is given; AllocateOr / AllocateOrThrow hand a failure to the caller's
// path instead of returning nullptr.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
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

}  // namespace
}  // namespace memarena::host
