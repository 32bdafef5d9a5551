// The typed conformance suite, run against the process-wide host allocator.
#include <memory>

#include "conformance/conformance_suite.h"
#include "memarena/memarena.h"

namespace {

struct HostFactory {
  // The shared instance, emptied of free memory, with the suite's limit as its ceiling
  // and peaks restarted, so the suite's peak checks see only its own work.
  static std::shared_ptr<memarena::Allocator> Make(std::size_t limit_bytes) {
    memarena::Allocator& host = memarena::HostAllocator();
    memarena::ReleaseUnusedSpans();
    if (!memarena::SetCeiling(limit_bytes)) {
      ADD_FAILURE() << "SetCeiling(" << limit_bytes << ") refused";
    }
    host.ResetPeakStats();
    return std::shared_ptr<memarena::Allocator>(&host, [](memarena::Allocator*) {
      memarena::SetCeiling(0);
    });
  }
  static constexpr std::size_t kMaxAlignment = std::size_t{1} << 20;
  static constexpr bool kHasLimit = true;
  static constexpr bool kAddressable = true;
};

}  // namespace

namespace memarena::testing {
INSTANTIATE_TYPED_TEST_SUITE_P(Host, AllocatorConformance, ::testing::Types<HostFactory>);
}  // namespace memarena::testing
