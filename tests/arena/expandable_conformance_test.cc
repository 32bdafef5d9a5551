// The allocator conformance suite on the expandable BFC arena (expandable_segments:1) over the
// host virtual-memory source (real pages, filled and verified) and the simulated one; the
// fake-CUDA virtual-memory source runs it in tests/cuda/vmm_source_test.cc.
#include <memory>

#include "arena/simulated_virtual_memory_source.h"
#include "conformance/arena_factory.h"
#include "conformance/conformance_suite.h"
#include "memarena/virtual_memory_source.h"

namespace memarena::testing {
namespace {

std::shared_ptr<MemorySource> HostVirtualSource() {
  return std::make_shared<HostVirtualMemorySource>(std::size_t{4} << 30);
}
std::shared_ptr<MemorySource> SimulatedVirtualSource() {
  return std::make_shared<arena::SimulatedVirtualMemorySource>();
}

using HostExpandableFactory =
    ArenaFactory<HostVirtualSource, ArenaMode::kExpandable, CpuAccess::kAddressable>;
using SimulatedExpandableFactory =
    ArenaFactory<SimulatedVirtualSource, ArenaMode::kExpandable, CpuAccess::kNotAddressable>;

}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(HostExpandableArena, AllocatorConformance,
                               ::testing::Types<HostExpandableFactory>);
INSTANTIATE_TYPED_TEST_SUITE_P(SimulatedExpandableArena, AllocatorConformance,
                               ::testing::Types<SimulatedExpandableFactory>);
}  // namespace memarena::testing
