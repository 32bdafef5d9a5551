// The process-wide on_invalid_free policy that the host heap and the Allocator base class
// share, and the one-line report of a pointer an allocator does not own.
#pragma once

#include <cstddef>
#include <string_view>

#include "memarena/config.h"

namespace memarena::common {

// Counts one invalid free and returns what to do about it. With `read_environment`, a
// policy nobody set yet comes from MEMARENA_CONF first (this parses, so allocates: the host
// heap, which may hold its lock here, passes false and gets the default, kAbort).
InvalidFreeAction CountInvalidFree(bool read_environment) noexcept;

// The ending of every invalid-free line: what happens next under `action`.
const char* InvalidFreeOutcome(InvalidFreeAction action) noexcept;

// The base class's report of a pointer that `allocator` does not own, in `operation`
// ("Deallocate"): one line on stderr unless the policy is kIgnore, then abort under kAbort.
// Allocation-free once the policy is known.
[[gnu::cold]] void ReportForeignPointer(std::string_view allocator, const void* ptr,
                                        const char* operation) noexcept;

}  // namespace memarena::common
