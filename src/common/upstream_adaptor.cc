// UpstreamAdaptor: the base of every adaptor: the upstream, the name, the calls passed on.
#include <fmt/format.h>

#include "memarena/adaptors.h"

namespace memarena {

UpstreamAdaptor::UpstreamAdaptor(Allocator& upstream, std::string_view kind_name)
    : upstream_(upstream), name_(fmt::format("{}({})", kind_name, upstream.name())) {}

std::size_t UpstreamAdaptor::ReleaseUnusedSpans() { return upstream_.ReleaseUnusedSpans(); }

AllocatorKind UpstreamAdaptor::kind() const noexcept { return upstream_.kind(); }

std::string UpstreamAdaptor::DescribeFailure(std::size_t bytes, std::size_t alignment) const {
  return upstream_.DescribeFailure(bytes, alignment);
}

}  // namespace memarena
