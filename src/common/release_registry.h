// The registry behind the free function memarena::ReleaseUnusedSpans(): every live arena
// registers itself so one call gives back the free memory of the whole process.
#pragma once

#include <cstddef>

namespace memarena {
class Allocator;
}

namespace memarena::common {

// Adds `allocator` to the set released by ReleaseAllRegistered(). Call from the
// constructor; pair with UnregisterReleasable() in the destructor. Thread-safe.
void RegisterReleasable(Allocator* allocator);
void UnregisterReleasable(Allocator* allocator) noexcept;

// Calls ReleaseUnusedSpans() on every registered allocator; returns the bytes given back.
std::size_t ReleaseAllRegistered();

}  // namespace memarena::common
