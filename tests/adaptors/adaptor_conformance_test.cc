// The allocator conformance suite on the stacking adaptors: LimitingAllocator and
// StatisticsAllocator over a BFC arena and over the host allocator, and stacked (Limiting
// over Statistics over a BFC arena, Tracing over Limiting over the host).
#include <cstdint>
#include <memory>
#include <string>

#include <unistd.h>

#include "conformance/conformance_suite.h"
#include "memarena/adaptors.h"
#include "memarena/arena.h"
#include "memarena/host.h"
#include "memarena/tracing.h"

namespace memarena {
namespace {

// No limit of the factory's own: a LimitingAllocator then gets the largest limit there is.
std::size_t LimitOrAll(std::size_t limit_bytes) {
  return limit_bytes == 0 ? SIZE_MAX : limit_bytes;
}

ArenaConfig MaxMem(std::size_t limit_bytes) {
  ArenaConfig config;
  config.max_mem = limit_bytes;
  return config;
}

// What the suite asks of every factory here: real memory, a limit, alignments to 1 MiB.
struct AdaptorFactory {
  static constexpr std::size_t kMaxAlignment = std::size_t{1} << 20;
  static constexpr bool kHasLimit = true;
  static constexpr bool kAddressable = true;
};

struct ArenaOwner {
  BfcArena arena{std::make_shared<HostMemorySource>(), ArenaConfig{}};
};

struct LimitingOverArena : AdaptorFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    struct Stack : ArenaOwner {
      explicit Stack(std::size_t limit) : limiting(arena, limit) {}
      LimitingAllocator limiting;
    };
    auto stack = std::make_shared<Stack>(LimitOrAll(limit_bytes));
    return std::shared_ptr<Allocator>(stack, &stack->limiting);
  }
};

struct LimitingOverHost : AdaptorFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    return std::make_shared<LimitingAllocator>(HostAllocator(), LimitOrAll(limit_bytes));
  }
};

struct StatisticsOverArena : AdaptorFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    struct Stack {
      explicit Stack(std::size_t limit)
          : arena(std::make_shared<HostMemorySource>(), MaxMem(limit)), statistics(arena) {}
      BfcArena arena;
      StatisticsAllocator statistics;
    };
    auto stack = std::make_shared<Stack>(limit_bytes);
    return std::shared_ptr<Allocator>(stack, &stack->statistics);
  }
};

struct LimitingOverStatisticsOverArena : AdaptorFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    struct Stack : ArenaOwner {
      explicit Stack(std::size_t limit) : statistics(arena), limiting(statistics, limit) {}
      StatisticsAllocator statistics;
      LimitingAllocator limiting;
    };
    auto stack = std::make_shared<Stack>(LimitOrAll(limit_bytes));
    return std::shared_ptr<Allocator>(stack, &stack->limiting);
  }
};

struct TracingOverLimitingOverHost : AdaptorFactory {
  static std::shared_ptr<Allocator> Make(std::size_t limit_bytes) {
    static int next_id = 0;
    struct Stack {
      explicit Stack(std::size_t limit)
          : path(::testing::TempDir() + "adaptor_stack." + std::to_string(getpid()) + "." +
                 std::to_string(next_id++) + ".csv"),
            limiting(HostAllocator(), limit),
            tracing(limiting, path) {}
      ~Stack() { std::remove(path.c_str()); }
      std::string path;
      LimitingAllocator limiting;
      TracingAllocator tracing;
    };
    auto stack = std::make_shared<Stack>(LimitOrAll(limit_bytes));
    return std::shared_ptr<Allocator>(stack, &stack->tracing);
  }
};

}  // namespace
}  // namespace memarena

namespace memarena::testing {
INSTANTIATE_TYPED_TEST_SUITE_P(LimitingOverArena, AllocatorConformance,
                               ::testing::Types<memarena::LimitingOverArena>);
INSTANTIATE_TYPED_TEST_SUITE_P(LimitingOverHost, AllocatorConformance,
                               ::testing::Types<memarena::LimitingOverHost>);
INSTANTIATE_TYPED_TEST_SUITE_P(StatisticsOverArena, AllocatorConformance,
                               ::testing::Types<memarena::StatisticsOverArena>);
INSTANTIATE_TYPED_TEST_SUITE_P(LimitingOverStatisticsOverArena, AllocatorConformance,
                               ::testing::Types<memarena::LimitingOverStatisticsOverArena>);
INSTANTIATE_TYPED_TEST_SUITE_P(TracingOverLimitingOverHost, AllocatorConformance,
                               ::testing::Types<memarena::TracingOverLimitingOverHost>);
}  // namespace memarena::testing
