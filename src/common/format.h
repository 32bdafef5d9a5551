// Shared message text: byte rendering and the out-of-memory diagnostic.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "memarena/stats.h"

namespace memarena::common {

// The one out-of-memory message every allocator uses, from its stats plus the knob
// advice the allocator knows best. Lists requested, in use, held, limit, releasable,
// largest free block and fragmentation.
std::string OutOfMemoryMessage(std::string_view allocator_name, std::size_t requested,
                               std::size_t alignment, const AllocatorStats& stats,
                               std::string_view reason, std::string_view advice);

}  // namespace memarena::common
