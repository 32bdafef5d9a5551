// The checks every Allocator gets once, in its non-virtual public functions: alignment and
// zero size, std::bad_alloc from an implementation, the invalid-free policy, and the
// out-of-memory diagnostic Allocate throws.
#include <fmt/format.h>

#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "common/format.h"
#include "common/inline_out_of_memory.h"
#include "common/invalid_free_policy.h"
#include "memarena/allocator.h"
#include "platform/stack.h"

namespace memarena {
namespace {

constexpr std::string_view kDefaultFailureReason = "the request does not fit";
constexpr std::string_view kDefaultFailureAdvice =
    "Raise the allocator's limit or free memory first.";

}  // namespace

MEMARENA_ALLOCATION_ENTRY void* Allocator::Allocate(std::size_t bytes, std::size_t alignment) {
  if (!IsValidAlignment(alignment)) {
    throw std::invalid_argument(fmt::format(
        "memarena: {}: alignment {} is not a power of two", name(), alignment));
  }
  void* ptr = TryAllocateOnStream(bytes, alignment, kNoStream);
  if (ptr == nullptr && bytes != 0) ThrowOutOfMemory(bytes, alignment);
  return ptr;
}

void Allocator::CountThrownFailure() noexcept {
  thrown_ooms_.fetch_add(1, std::memory_order_relaxed);
}

void Allocator::ReportNotOwned(void* ptr) const noexcept {
  common::ReportForeignPointer(name(), ptr, "Deallocate");
}

AllocatorStats Allocator::GetStats() const {
  AllocatorStats stats = DoGetStats();
  stats.num_ooms += thrown_ooms_.load(std::memory_order_relaxed);
  return stats;
}

std::string Allocator::DescribeFailure(std::size_t bytes, std::size_t alignment) const {
  return common::OutOfMemoryMessage(name(), bytes, alignment, GetStats(), kDefaultFailureReason,
                                    kDefaultFailureAdvice);
}

void Allocator::ThrowOutOfMemory(std::size_t bytes, std::size_t alignment) const {
  std::string text;
  try {
    text = DescribeFailure(bytes, alignment);
  } catch (const std::bad_alloc&) {
    // The text found no memory: the exception it threw described the text's own request.
    common::InlineOutOfMemory error;
    common::WriteOutOfMemoryMessage(error.text(), name(), bytes, alignment, GetStats(),
                                    kDefaultFailureReason, kDefaultFailureAdvice);
    throw error;
  }
  throw OutOfMemory(std::move(text));
}

}  // namespace memarena
