// The free's check reads a page's pagemap slot without the lock while the page heap may be
// rewriting it (Pagemap::Set, as a span is given out again with another class). Whatever a
// lookup returns must be the page as it was before or after a Set: the start test that comes
// with an entry is the test of the entry's own class, never a test read from the slot's next
// state beside an entry from its last one (issue 12: a double free racing with its span's
// reuse could pass such a torn check).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "host/object_start.h"
#include "host/pagemap.h"
#include "host/size_classes.h"
#include "host/span.h"

namespace memarena::host {
namespace {

TEST(PagemapRace, ALookupNeverPairsOneClasssEntryWithAnotherClasssStartTest) {
  // Two classes of different sizes: their entries and start tests differ.
  const std::size_t a = 3;
  const std::size_t b = 5;
  ASSERT_NE(ClassInfo(a).size, ClassInfo(b).size);
  auto pagemap = std::make_unique<Pagemap>();
  const std::uintptr_t page = 5 * Pagemap::kLeafLength + 7;
  ASSERT_TRUE(pagemap->Ensure(page, 1));
  Span span;
  span.first_page = page;
  span.num_pages = 1;
  pagemap->Set(page, 1, &span, static_cast<std::uint8_t>(a));

  // The span's page goes from class a to class b and back, as a span freed and given out
  // again does, while this thread looks the page up as the free path does, until it has
  // seen the page change class often enough or 10 s pass (on a loaded machine the two
  // threads overlap only now and then; against the 32-byte slot that paired a test with
  // the entry, a few thousand changes showed 10^5 and more torn lookups).
  constexpr std::uint64_t kMinLookups = 1'000'000;
  constexpr std::uint64_t kMinChanges = 5'000;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (std::uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      pagemap->Set(page, 1, &span, static_cast<std::uint8_t>(i % 2 == 0 ? b : a));
    }
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const void* ptr = reinterpret_cast<const void*>(page << kPageShift);
  std::uint64_t torn = 0;
  std::uint64_t changes = 0;  // lookups that found another class than the one before
  std::uint64_t lookups = 0;
  std::size_t last_cls = a;
  for (; lookups < kMinLookups || changes < kMinChanges; ++lookups) {
    if (lookups % 4096 == 0 && std::chrono::steady_clock::now() > deadline) break;
    const Pagemap::Lookup found = pagemap->Find(ptr);
    const std::size_t cls = found.entry & Pagemap::kClassMask;
    changes += cls != last_cls;
    last_cls = cls;
    const ObjectStartTest& own = detail::kObjectStartTests[cls];
    const bool entry_is_a_state = found.entry == ObjectStartEntry(page, 1, a) ||
                                  found.entry == ObjectStartEntry(page, 1, b);
    if (!entry_is_a_state || found.start_test.multiplier != own.multiplier ||
        found.start_test.bound != own.bound) {
      ++torn;
    }
  }
  stop.store(true, std::memory_order_relaxed);
  writer.join();
  EXPECT_EQ(torn, 0u) << "of " << lookups << " lookups, " << changes << " class changes seen";
  // The lookups ran beside the rewrites (else nothing was tested).
  EXPECT_GT(changes, 0u) << "of " << lookups << " lookups";
}

}  // namespace
}  // namespace memarena::host
