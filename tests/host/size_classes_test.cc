// The size-class map: every size fits its class, waste stays within the bound, spans and
// aligned lookups are consistent.
#include "host/size_classes.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace memarena::host {
namespace {

// The smallest class that fits among those open to plain requests (not aligned_only).
TEST(SizeClasses, EverySizeMapsToTheSmallestClassThatFits) {
  for (std::size_t size = 1; size <= kMaxSmallSize; ++size) {
    const std::size_t cls = ClassFor(size);
    ASSERT_GE(cls, 1u) << size;
    ASSERT_LE(cls, kNumClasses) << size;
    ASSERT_GE(ClassSize(cls), size) << "class too small for " << size;
    ASSERT_FALSE(ClassInfo(cls).aligned_only) << size;
    std::size_t below = cls - 1;
    while (below >= 1 && ClassInfo(below).aligned_only) --below;
    if (below >= 1) {
      ASSERT_LT(ClassSize(below), size) << "a smaller class fits " << size;
    }
  }
  EXPECT_EQ(ClassFor(0), 1u);
  EXPECT_EQ(ClassSize(kNumClasses), kMaxSmallSize);
}

TEST(SizeClasses, InternalWasteIsWithinOneEighthAboveTheSmallestClasses) {
  for (std::size_t size = 1; size <= kMaxSmallSize; ++size) {
    const std::size_t waste = ClassSize(ClassFor(size)) - size;
    if (size <= 128) {
      ASSERT_LT(waste, kMinAlign) << size;  // under one alignment granule
    } else {
      ASSERT_LE(waste * 8, size) << "waste " << waste << " for " << size << " is over 12.5%";
    }
  }
}

TEST(SizeClasses, ClassesAreAlignedIncreasingAndDense) {
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    EXPECT_EQ(ClassSize(cls) % kMinAlign, 0u) << cls;
    if (cls > 1) {
      EXPECT_GT(ClassSize(cls), ClassSize(cls - 1));
    }
  }
  // At least 4 classes in every doubling from 128 B up.
  for (std::size_t low = 128; low < kMaxSmallSize; low *= 2) {
    int in_doubling = 0;
    for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
      if (ClassSize(cls) > low && ClassSize(cls) <= 2 * low) ++in_doubling;
    }
    EXPECT_GE(in_doubling, 4) << "doubling above " << low;
  }
}

TEST(SizeClasses, SpansHoldWholeObjectsWithLittleTail) {
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const SizeClassInfo& info = ClassInfo(cls);
    const std::size_t span = std::size_t{info.pages} * kPageSize;
    EXPECT_GE(info.objects, 1u);
    EXPECT_EQ(info.objects, span / info.size);
    EXPECT_LE((span % info.size) * 8, span) << "span tail of class " << cls;
    EXPECT_GE(info.batch, 2u);
    EXPECT_LE(info.batch, 32u);
  }
}

// A short span is the shortest of at least kShortSpanBytes (and one object) whose tail is
// at most an eighth of it, where that is shorter than the full span.
TEST(SizeClasses, ShortSpansAreTheShortestWithLittleTail) {
  const auto tail_is_little = [](const SizeClassInfo& info, std::size_t pages) {
    const std::size_t bytes = pages * kPageSize;
    return (bytes % info.size) * 8 <= bytes;
  };
  std::size_t short_classes = 0;
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) {
    const SizeClassInfo& info = ClassInfo(cls);
    const std::size_t least = std::max<std::size_t>(kShortSpanBytes, info.size);
    EXPECT_LE(info.short_pages, info.pages) << info.size;
    EXPECT_EQ(info.short_objects, info.ObjectsIn(info.short_pages)) << info.size;
    EXPECT_EQ(info.ObjectsIn(info.pages), info.objects) << info.size;
    if (info.short_pages == info.pages) continue;
    ++short_classes;
    EXPECT_GE(std::size_t{info.short_pages} * kPageSize, least) << info.size;
    EXPECT_TRUE(tail_is_little(info, info.short_pages)) << info.size;
    for (std::size_t pages = (least + kPageSize - 1) / kPageSize; pages < info.short_pages; ++pages) {
      EXPECT_FALSE(tail_is_little(info, pages)) << info.size << ": " << pages << " pages would do";
    }
  }
  EXPECT_GT(short_classes, 0u);
}

TEST(SizeClasses, AlignedLookupGivesAlignedClassesThatFit) {
  for (std::size_t align = kMinAlign; align <= kPageSize; align *= 2) {
    for (std::size_t size = 1; size <= 70000; size += 97) {
      const std::size_t cls = ClassForAligned(size, align);
      ASSERT_NE(cls, 0u) << size << " @" << align;
      EXPECT_GE(ClassSize(cls), size);
      EXPECT_EQ(ClassSize(cls) % align, 0u);
    }
  }
  EXPECT_EQ(ClassForAligned(kMaxSmallSize + 1, 64), 0u);
}

// Plain 4 KiB requests get objects kColorBytes off the 4 KiB stride (L1 sets); one aligned to
// 256 B or more gets a 4 KiB object, not the next multiple of 4 KiB (8 KiB).
TEST(SizeClasses, FourKibRequestsAreColoredUnlessAlignedBeyond128Bytes) {
  const std::size_t plain = ClassFor(kColoredSize);
  EXPECT_EQ(ClassSize(plain), kColoredSize + kColorBytes);
  EXPECT_NE(ClassSize(plain) % 4096, 0u);
  EXPECT_EQ(ClassFor(kColoredSize - 255), plain) << "3841 B and up share it";
  for (std::size_t size : {std::size_t{1}, std::size_t{100}, std::size_t{4000}, kColoredSize}) {
    const std::size_t aligned = ClassForAligned(size, 4096);
    EXPECT_EQ(ClassSize(aligned), kColoredSize) << size;
    EXPECT_TRUE(ClassInfo(aligned).aligned_only) << size;
  }
  EXPECT_EQ(ClassSize(ClassForAligned(kColoredSize + 1, 4096)), 2 * kColoredSize);
  // Alignments the colored size is a multiple of keep it (PyTorch aligns tensors to 64 B).
  EXPECT_EQ(ClassForAligned(kColoredSize, 64), plain);
  EXPECT_EQ(ClassForAligned(kColoredSize, 128), plain);
  EXPECT_TRUE(ClassInfo(ClassForAligned(kColoredSize, 256)).aligned_only);
  int aligned_only = 0;
  for (std::size_t cls = 1; cls <= kNumClasses; ++cls) aligned_only += ClassInfo(cls).aligned_only;
  EXPECT_EQ(aligned_only, 1) << "only the 4 KiB class has an aligned twin";
}

}  // namespace
}  // namespace memarena::host
