// Shared message text: byte rendering and the out-of-memory diagnostic.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "memarena/stats.h"

namespace memarena::common {

// A byte count as fmt renders it in place ("512 B", "1.50 MiB", as FormatBytes), with no
// std::string: usable where the heap has just failed.
struct ByteCount {
  std::size_t bytes;
};

// The one out-of-memory message every allocator uses, from its stats plus the knob
// advice the allocator knows best. Lists requested, in use, held, limit, releasable,
// largest free block and fragmentation.
std::string OutOfMemoryMessage(std::string_view allocator_name, std::size_t requested,
                               std::size_t alignment, const AllocatorStats& stats,
                               std::string_view reason, std::string_view advice);

// The same message written into `out` without the heap (for a caller whose heap just said
// no): cut to fit and NUL-terminated. Returns the text written.
std::string_view WriteOutOfMemoryMessage(std::span<char> out, std::string_view allocator_name,
                                         std::size_t requested, std::size_t alignment,
                                         const AllocatorStats& stats, std::string_view reason,
                                         std::string_view advice) noexcept;

}  // namespace memarena::common

template <>
struct fmt::formatter<memarena::common::ByteCount> {
  constexpr auto parse(format_parse_context& ctx) { return ctx.begin(); }
  format_context::iterator format(memarena::common::ByteCount count, format_context& ctx) const;
};
