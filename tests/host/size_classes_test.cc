// The size-class map: every size fits its class, waste stays within the bound, spans and
// aligned lookups are consistent.
#include "host/size_classes.h"

#include <gtest/gtest.h>

namespace memarena::host {
namespace {

TEST(SizeClasses, EverySizeMapsToTheSmallestClassThatFits) {
  for (std::size_t size = 1; size <= kMaxSmallSize; ++size) {
    const std::size_t cls = ClassFor(size);
    ASSERT_GE(cls, 1u) << size;
    ASSERT_LE(cls, kNumClasses) << size;
    ASSERT_GE(ClassSize(cls), size) << "class too small for " << size;
    if (cls > 1) {
      ASSERT_LT(ClassSize(cls - 1), size) << "a smaller class fits " << size;
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

}  // namespace
}  // namespace memarena::host
