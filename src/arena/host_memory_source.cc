// HostMemorySource: arena regions from anonymous mmap, through the platform layer only.
#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "memarena/memory_source.h"
#include "platform/os.h"

namespace memarena {
namespace {

// Page-rounded length of a range; 0 when rounding would overflow.
std::size_t MappedLength(std::size_t bytes) noexcept {
  const std::size_t page = platform::PageSize();
  if (bytes > std::numeric_limits<std::size_t>::max() - page) return 0;
  return (bytes + page - 1) / page * page;
}

}  // namespace

HostMemorySource::HostMemorySource(std::size_t alignment) {
  const std::size_t page = platform::PageSize();
  if (alignment != 0 && !IsValidAlignment(alignment)) {
    throw std::invalid_argument(
        fmt::format("HostMemorySource: alignment {} is not a power of two", alignment));
  }
  alignment_ = alignment < page ? page : alignment;
}

void* HostMemorySource::Reserve(std::size_t bytes) noexcept {
  const std::size_t length = MappedLength(bytes);
  return length == 0 ? nullptr : platform::MapPages(length, alignment_);
}

void HostMemorySource::Release(void* ptr, std::size_t bytes) noexcept {
  platform::UnmapPages(ptr, MappedLength(bytes));
}

}  // namespace memarena
