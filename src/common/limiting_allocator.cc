// LimitingAllocator: the limit check lives in BookkeepingAdaptor; this owns its constructor
// rule and its diagnostic.
#include <fmt/format.h>

#include "common/format.h"
#include "memarena/adaptors.h"

namespace memarena {

namespace {
std::size_t CheckedLimit(std::size_t limit_bytes) {
  if (limit_bytes == 0) {
    throw ConfigError(
        "memarena LimitingAllocator: limit_bytes must be at least 1 (there is no 'unlimited' "
        "LimitingAllocator; use the upstream directly)");
  }
  return limit_bytes;
}
}  // namespace

LimitingAllocator::LimitingAllocator(Allocator& upstream, std::size_t limit_bytes)
    : BookkeepingAdaptor(upstream, CheckedLimit(limit_bytes), "limiting") {}

std::string LimitingAllocator::DescribeFailure(std::size_t bytes, std::size_t alignment) const {
  const AllocatorStats stats = GetStats();
  if (!RefusedByLimit(bytes) && stats.bytes_held + bytes <= limit()) {
    return upstream().DescribeFailure(bytes, alignment);
  }
  return common::OutOfMemoryMessage(
      name(), bytes, alignment, stats,
      fmt::format("held through this adaptor would cross its limit of {}", FormatBytes(limit())),
      "Raise the LimitingAllocator's limit (its limit_bytes constructor argument) or free "
      "memory allocated through it first.");
}

}  // namespace memarena
