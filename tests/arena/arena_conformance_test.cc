// The allocator conformance suite on BfcArena over the mmap source (real pages, filled and
// verified) and over the simulated source (fake addresses, never touched).
#include <memory>

#include "arena/simulated_memory_source.h"
#include "conformance/conformance_suite.h"
#include "memarena/arena.h"

namespace memarena {
namespace {

ArenaConfig LimitedConfig(std::size_t limit_bytes) {
  ArenaConfig config;
  config.max_mem = limit_bytes;
  return config;
}

struct HostArenaFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    return std::make_shared<BfcArena>(std::make_shared<HostMemorySource>(),
                                      LimitedConfig(limit_bytes));
  }
  static constexpr std::size_t kMaxAlignment = std::size_t{1} << 20;
  static constexpr bool kHasLimit = true;
  static constexpr bool kAddressable = true;
};

struct SimulatedArenaFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    return std::make_shared<BfcArena>(std::make_shared<arena::SimulatedMemorySource>(),
                                      LimitedConfig(limit_bytes));
  }
  static constexpr std::size_t kMaxAlignment = std::size_t{1} << 20;
  static constexpr bool kHasLimit = true;
  static constexpr bool kAddressable = false;
};

}  // namespace
}  // namespace memarena

namespace memarena::testing {
INSTANTIATE_TYPED_TEST_SUITE_P(HostArena, AllocatorConformance,
                               ::testing::Types<memarena::HostArenaFactory>);
INSTANTIATE_TYPED_TEST_SUITE_P(SimulatedArena, AllocatorConformance,
                               ::testing::Types<memarena::SimulatedArenaFactory>);
}  // namespace memarena::testing
