// The allocator conformance suite on BfcArena over the mmap source (real pages, filled and
// verified) and over the simulated source (fake addresses, never touched).
#include <memory>

#include "arena/simulated_memory_source.h"
#include "conformance/arena_factory.h"
#include "conformance/conformance_suite.h"

namespace memarena::testing {
namespace {

std::shared_ptr<MemorySource> HostSource() { return std::make_shared<HostMemorySource>(); }
std::shared_ptr<MemorySource> SimulatedSource() {
  return std::make_shared<arena::SimulatedMemorySource>();
}

using HostArenaFactory = ArenaFactory<HostSource, ArenaMode::kPlain, CpuAccess::kAddressable>;
using SimulatedArenaFactory =
    ArenaFactory<SimulatedSource, ArenaMode::kPlain, CpuAccess::kNotAddressable>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(HostArena, AllocatorConformance, ::testing::Types<HostArenaFactory>);
INSTANTIATE_TYPED_TEST_SUITE_P(SimulatedArena, AllocatorConformance,
                               ::testing::Types<SimulatedArenaFactory>);
}  // namespace memarena::testing
