// The stacking adaptors after RMM's: their common base UpstreamAdaptor, LimitingAllocator (a
// limit on what passes through) and StatisticsAllocator (exact requested bytes), each an
// Allocator over any upstream Allocator, so they stack on each other, on TracingAllocator and
// on every allocator of the library.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "memarena/allocator.h"

namespace memarena {

// What every adaptor shares (RMM's adaptors over an upstream resource): the upstream it wraps,
// which must outlive it; its name, "KIND(upstream's name)"; and the calls it passes straight
// on: ReleaseUnusedSpans, kind, and DescribeFailure unless the adaptor has its own. Stats,
// peaks and the Do* functions are each adaptor's.
class UpstreamAdaptor : public Allocator {
 public:
  std::size_t ReleaseUnusedSpans() override;  // the upstream's
  AllocatorKind kind() const noexcept override;  // the upstream's
  std::string_view name() const noexcept override { return name_; }
  std::string DescribeFailure(std::size_t bytes, std::size_t alignment) const override;

  Allocator& upstream() const noexcept { return upstream_; }

 protected:
  UpstreamAdaptor(Allocator& upstream, std::string_view kind_name);

 private:
  Allocator& upstream_;
  const std::string name_;
};

// What the limiting and statistics adaptors share: a record of every block they passed on
// (its usable and requested bytes) and the counters over it. Their stats are their own: in
// use and held are the usable bytes of live blocks taken through the adaptor (an adaptor
// caches nothing, so the two are equal), requested is what its callers asked for;
// releasable and the largest free block are 0. ReleaseUnusedSpans, kind and the memory are
// the upstream's. A pointer the adaptor did not hand out is never passed upstream: it goes
// to on_invalid_free under the adaptor's name.
// Each call costs the upstream call plus a mutex and a hash-map insert or erase.
class BookkeepingAdaptor : public UpstreamAdaptor {
 public:
  ~BookkeepingAdaptor() override;

  void ResetPeakStats() override;

 protected:
  // `upstream` must outlive the adaptor. `limit_bytes` 0: no limit of its own.
  BookkeepingAdaptor(Allocator& upstream, std::size_t limit_bytes, std::string_view kind_name);

  // The size asked for at `ptr`; 0 for a pointer that is not a live block of the adaptor.
  std::size_t RequestedBytes(const void* ptr) const noexcept;
  // True when this thread's last failed request of `bytes` here was refused by the limit
  // (not by the upstream).
  bool RefusedByLimit(std::size_t bytes) const noexcept;
  std::size_t limit_bytes() const noexcept;

 private:
  // Admits the request against the limit before the upstream call, then records the block
  // at the upstream's usable size (a block that crosses the limit goes back).
  void* DoAllocate(std::size_t bytes, std::size_t alignment, StreamHandle stream) override;
  // kNotOwned unless `ptr` is in the record: a foreign pointer never reaches the upstream.
  FreeResult DoDeallocate(void* ptr, StreamHandle stream) noexcept override;
  std::size_t DoUsableSize(const void* ptr) const noexcept override;
  AllocatorStats DoGetStats() const override;

  struct Ledger;
  std::unique_ptr<Ledger> ledger_;
};

// Fails a request cleanly (nullptr, or OutOfMemory from Allocate) when the usable bytes of
// live blocks taken through it would exceed `limit_bytes`, whatever the upstream could still
// give (RMM's limiting_resource_adaptor). The diagnostic names the request, in use, held and
// the limit, and the knob: this adaptor's limit. Stats report limit_bytes = the limit.
class LimitingAllocator final : public BookkeepingAdaptor {
 public:
  // Throws ConfigError when `limit_bytes` is 0.
  LimitingAllocator(Allocator& upstream, std::size_t limit_bytes);

  std::size_t limit() const noexcept { return limit_bytes(); }

  // The limit's own diagnostic when the limit refused the request, else the upstream's.
  std::string DescribeFailure(std::size_t bytes, std::size_t alignment) const override;
};

// Counts exactly what its callers asked for: bytes_requested and its peak are the sums of
// the requested sizes (not the upstream's rounded sizes), and RequestedSize answers per block
// (RMM's statistics_resource_adaptor). Stats report the upstream's limit.
class StatisticsAllocator final : public BookkeepingAdaptor {
 public:
  explicit StatisticsAllocator(Allocator& upstream)
      : BookkeepingAdaptor(upstream, 0, "statistics") {}

  // The size asked for at `ptr`; 0 for nullptr or a pointer that is not a live block here.
  std::size_t RequestedSize(const void* ptr) const noexcept { return RequestedBytes(ptr); }
};

}  // namespace memarena
