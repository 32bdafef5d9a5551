// TracingAllocator: forwards to its upstream and logs each call through a TraceLog.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "common/trace_log.h"
#include "memarena/tracing.h"

namespace memarena {

struct TracingAllocator::Log {
  common::TraceLog log;
};

TracingAllocator::TracingAllocator(Allocator& upstream, const std::string& path)
    : UpstreamAdaptor(upstream, "tracing"), log_(std::make_unique<Log>()) {
  if (!log_->log.Open(path.c_str())) {
    throw TraceError(fmt::format("{}: cannot open the trace for writing: {}", path,
                                 std::strerror(errno)));
  }
}

TracingAllocator::~TracingAllocator() = default;

void* TracingAllocator::DoAllocate(std::size_t bytes, std::size_t alignment,
                                   StreamHandle stream) {
  void* ptr = nullptr;
  try {
    ptr = AllocateIn(upstream(), bytes, alignment, stream);
  } catch (const std::bad_alloc&) {
    log_->log.Record(TraceAction::kAllocateFailure, nullptr, bytes);
    throw;  // the base counts it
  }
  log_->log.Record(ptr != nullptr ? TraceAction::kAllocate : TraceAction::kAllocateFailure, ptr,
                   bytes);
  return ptr;
}

FreeResult TracingAllocator::DoDeallocate(void* ptr, StreamHandle stream) noexcept {
  // Logged before the upstream free: once freed, another thread may get the same address and
  // log its allocate row, which must come after this free row for replay to pair them.
  // Every live block has a usable size of at least one byte, so 0 means "not the upstream's":
  // such a pointer is neither logged nor passed on.
  const std::size_t usable = upstream().UsableSize(ptr);
  if (usable == 0) return FreeResult::kNotOwned;
  log_->log.Record(TraceAction::kFree, ptr, usable);
  return DeallocateIn(upstream(), ptr, stream);
}

std::size_t TracingAllocator::DoUsableSize(const void* ptr) const noexcept {
  return upstream().UsableSize(ptr);
}

AllocatorStats TracingAllocator::DoGetStats() const { return upstream().GetStats(); }

void TracingAllocator::ResetPeakStats() { upstream().ResetPeakStats(); }

void TracingAllocator::Flush() noexcept { log_->log.Flush(); }

}  // namespace memarena
