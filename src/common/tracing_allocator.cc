// TracingAllocator: forwards to its upstream and logs each call through a TraceLog.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "common/trace_log.h"
#include "memarena/tracing.h"

namespace memarena {

struct TracingAllocator::Log {
  common::TraceLog log;
  std::string name;
};

TracingAllocator::TracingAllocator(Allocator& upstream, const std::string& path)
    : upstream_(upstream), log_(std::make_unique<Log>()) {
  if (!log_->log.Open(path.c_str())) {
    throw TraceError(fmt::format("{}: cannot open the trace for writing: {}", path,
                                 std::strerror(errno)));
  }
  log_->name = fmt::format("tracing({})", upstream.name());
}

TracingAllocator::~TracingAllocator() = default;

void* TracingAllocator::TryAllocate(std::size_t bytes, std::size_t alignment) noexcept {
  void* ptr = upstream_.TryAllocate(bytes, alignment);
  log_->log.Record(ptr != nullptr ? TraceAction::kAllocate : TraceAction::kAllocateFailure, ptr,
                   bytes);
  return ptr;
}

void TracingAllocator::Deallocate(void* ptr) noexcept {
  if (ptr == nullptr) return;
  // Logged before the upstream free: once freed, another thread may get the same address and
  // log its allocate row, which must come after this free row for replay to pair them.
  log_->log.Record(TraceAction::kFree, ptr, upstream_.UsableSize(ptr));
  upstream_.Deallocate(ptr);
}

std::size_t TracingAllocator::UsableSize(const void* ptr) const noexcept {
  return upstream_.UsableSize(ptr);
}

AllocatorStats TracingAllocator::GetStats() const { return upstream_.GetStats(); }

void TracingAllocator::ResetPeakStats() { upstream_.ResetPeakStats(); }

std::size_t TracingAllocator::ReleaseUnusedSpans() { return upstream_.ReleaseUnusedSpans(); }

AllocatorKind TracingAllocator::kind() const noexcept { return upstream_.kind(); }

std::string_view TracingAllocator::name() const noexcept { return log_->name; }

std::string TracingAllocator::DescribeFailure(std::size_t bytes, std::size_t alignment) const {
  return upstream_.DescribeFailure(bytes, alignment);
}

void TracingAllocator::Flush() noexcept { log_->log.Flush(); }

}  // namespace memarena
