// ReleaseUnusedSpans() really gives memory back: after a workload of >= 512 MiB in mixed
// sizes is freed, resident memory (from /proc/self/statm) falls by >= 90% of what it added.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "memarena/memarena.h"
#include "platform/os.h"

namespace memarena {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

TEST(Release, ResidentMemoryDropsAfterReleaseUnusedSpans) {
  Allocator& host = HostAllocator();
  ReleaseUnusedSpans();
  std::mt19937_64 rng(2024);
  std::vector<void*> blocks;
  blocks.reserve(400000);  // glibc memory, reserved before the baseline is taken
  const std::size_t rss_before = platform::ResidentBytes();
  ASSERT_GT(rss_before, 0u) << "/proc/self/statm unreadable";
  constexpr std::size_t kTarget = std::size_t{512} << 20;
  std::size_t total = 0;
  while (total < kTarget) {
    // Half the bytes in small objects (16 B - 4 KiB), half in large (64 KiB - 2 MiB).
    const bool small = rng() % 100 < 97;
    const std::size_t n = small ? 16 + rng() % 4081 : (64u << 10) + rng() % (2u << 20);
    void* p = host.Allocate(n);
    std::memset(p, 0x77, n);  // resident, not just reserved
    blocks.push_back(p);
    total += n;
  }
  const std::size_t rss_peak = platform::ResidentBytes();
  const std::uint64_t released_before = host.GetStats().bytes_released;
  for (void* p : blocks) host.Deallocate(p);
  // Without a ceiling the page heap already returns free spans beyond a bound as they
  // are freed; ReleaseUnusedSpans() returns the rest.
  const std::size_t released = ReleaseUnusedSpans();
  const std::uint64_t released_total = host.GetStats().bytes_released - released_before;
  const std::size_t rss_after = platform::ResidentBytes();
  ASSERT_GE(rss_peak - rss_before, kTarget * 9 / 10) << "the workload's memory is not resident";
  // Under TSAN the workload also adds shadow memory (several times its size) that only
  // the sanitizer can free; there the drop is measured against the workload's own bytes.
  const std::size_t added = kThreadSanitizer ? total : rss_peak - rss_before;
  const std::size_t dropped = rss_peak > rss_after ? rss_peak - rss_after : 0;
  EXPECT_GE(dropped * 10, added * 9) << "RSS before " << rss_before << ", peak " << rss_peak
                                     << ", after " << rss_after << ", released " << released;
  EXPECT_GE(released_total, kTarget * 9 / 10);
  const AllocatorStats s = host.GetStats();
  EXPECT_EQ(s.bytes_releasable, 0u);
  EXPECT_GT(s.num_releases, 0u);
  EXPECT_GE(s.bytes_released, released);
}

}  // namespace
}  // namespace memarena
