// The allocator conformance suite on the expandable BFC arena (expandable_segments:1) over the
// host virtual-memory source (real pages, filled and verified) and the simulated one.
#include <memory>

#include "arena/simulated_virtual_memory_source.h"
#include "conformance/conformance_suite.h"
#include "memarena/arena.h"
#include "memarena/virtual_memory_source.h"

namespace memarena {
namespace {

ArenaConfig ExpandableConfig(std::size_t limit_bytes) {
  ArenaConfig config;
  config.max_mem = limit_bytes;
  config.expandable_segments = true;
  config.expandable_decommit_threshold = 0;  // decommit at every chance: the most churn
  return config;
}

struct HostExpandableFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    return std::make_shared<BfcArena>(std::make_shared<HostVirtualMemorySource>(std::size_t{4} << 30),
                                      ExpandableConfig(limit_bytes));
  }
  static constexpr std::size_t kMaxAlignment = std::size_t{1} << 20;
  static constexpr bool kHasLimit = true;
  static constexpr bool kAddressable = true;
};

struct SimulatedExpandableFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    return std::make_shared<BfcArena>(std::make_shared<arena::SimulatedVirtualMemorySource>(),
                                      ExpandableConfig(limit_bytes));
  }
  static constexpr std::size_t kMaxAlignment = std::size_t{1} << 20;
  static constexpr bool kHasLimit = true;
  static constexpr bool kAddressable = false;
};

}  // namespace
}  // namespace memarena

namespace memarena::testing {
INSTANTIATE_TYPED_TEST_SUITE_P(HostExpandableArena, AllocatorConformance,
                               ::testing::Types<memarena::HostExpandableFactory>);
INSTANTIATE_TYPED_TEST_SUITE_P(SimulatedExpandableArena, AllocatorConformance,
                               ::testing::Types<memarena::SimulatedExpandableFactory>);
}  // namespace memarena::testing
