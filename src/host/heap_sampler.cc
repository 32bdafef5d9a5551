// The sampled-block table (fixed capacity, OS pages, chained by pointer hash) and the
// per-thread exponential draw of the next sampling point.
#include "host/heap_sampler.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "host/spin_lock.h"
#include "platform/os.h"
#include "platform/stack.h"

namespace memarena::host::sampler {
namespace {

// 32768 live samples cover 16 GiB of live memory at the default 512 KiB mean.
constexpr std::uint32_t kCapacity = 1u << 15;
constexpr std::uint32_t kBuckets = 1u << 13;

struct Table {
  SpinLock lock;
  Sample* entries MEMARENA_GUARDED_BY(lock) = nullptr;  // kCapacity, mapped on first use
  // kBuckets chain heads (index + 1).
  std::uint32_t* heads MEMARENA_GUARDED_BY(lock) = nullptr;
  // Free entries (index + 1), chained through next.
  std::uint32_t free_head MEMARENA_GUARDED_BY(lock) = 0;
  // Entries below this were handed out at least once.
  std::uint32_t never_used MEMARENA_GUARDED_BY(lock) = 0;
  std::atomic<std::uint32_t> live{0};
};
constinit Table g_table;
constinit std::atomic<std::size_t> g_mean{0};
constinit std::atomic<std::uint64_t> g_epoch{0};
constinit std::atomic<std::uint64_t> g_thread_seeds{0};

thread_local bool t_busy __attribute__((tls_model("initial-exec"))) = false;
thread_local std::uint64_t t_rng __attribute__((tls_model("initial-exec"))) = 0;

// Sets t_busy for a scope: allocations made meanwhile (by the unwinder, by a copy) are
// neither sampled nor able to re-enter the table's lock.
class BusyScope {
 public:
  BusyScope() noexcept { t_busy = true; }
  ~BusyScope() { t_busy = false; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;
};

std::uint32_t Bucket(const void* ptr) noexcept {
  const auto bits = reinterpret_cast<std::uintptr_t>(ptr) >> 13;  // spans are page-aligned
  return static_cast<std::uint32_t>((bits * 0x9E3779B97F4A7C15ull) >> 51) & (kBuckets - 1);
}

bool MapTable() noexcept MEMARENA_REQUIRES(g_table.lock) {
  if (g_table.entries != nullptr) return true;
  const std::size_t page = platform::PageSize();
  const auto round = [page](std::size_t bytes) { return (bytes + page - 1) / page * page; };
  void* entries = platform::MapPages(round(sizeof(Sample) * kCapacity), page);
  void* heads = platform::MapPages(round(sizeof(std::uint32_t) * kBuckets), page);
  if (entries == nullptr || heads == nullptr) return false;  // leaks a page or two: rare
  g_table.entries = static_cast<Sample*>(entries);
  g_table.heads = static_cast<std::uint32_t*>(heads);
  return true;
}

// xorshift64*: per thread, seeded from a process-wide sequence so runs are repeatable.
double UniformOpen() noexcept {
  if (t_rng == 0) {
    t_rng = 0x9E3779B97F4A7C15ull * (g_thread_seeds.fetch_add(1, std::memory_order_relaxed) + 1);
  }
  t_rng ^= t_rng >> 12;
  t_rng ^= t_rng << 25;
  t_rng ^= t_rng >> 27;
  const std::uint64_t bits = (t_rng * 0x2545F4914F6CDD1Dull) >> 11;  // 53 bits
  return (static_cast<double>(bits) + 0.5) / 9007199254740992.0;     // in (0, 1)
}

}  // namespace

void SetMeanInterval(std::size_t bytes) noexcept {
  if (bytes != 0) platform::PrepareStackCapture();
  g_mean.store(bytes, std::memory_order_relaxed);
  g_epoch.fetch_add(1, std::memory_order_release);
}

std::size_t MeanInterval() noexcept { return g_mean.load(std::memory_order_relaxed); }

std::uint64_t Epoch() noexcept { return g_epoch.load(std::memory_order_acquire); }

std::int64_t NextInterval() noexcept {
  const std::size_t mean = MeanInterval();
  if (mean == 0) return kOffInterval;
  const double draw = -std::log(UniformOpen()) * static_cast<double>(mean);
  return static_cast<std::int64_t>(std::min(draw, 1e18));
}

bool Busy() noexcept { return t_busy; }

MEMARENA_ALLOCATION_ENTRY bool Record(void* ptr, std::size_t bytes) noexcept {
  if (t_busy) return false;
  BusyScope busy;
  // Captured outside the lock; only the frames captured are copied (a whole Sample is
  // 280 bytes, a sample costs little else).
  void* frames[kMaxFrames];
  const int depth = platform::CaptureStack(frames, kMaxFrames);
  SpinLockHolder hold(g_table.lock);
  if (!MapTable()) return false;
  std::uint32_t index = g_table.free_head;
  if (index != 0) {
    g_table.free_head = g_table.entries[index - 1].next;
  } else if (g_table.never_used < kCapacity) {
    index = ++g_table.never_used;
  } else {
    return false;
  }
  const std::uint32_t bucket = Bucket(ptr);
  Sample& entry = g_table.entries[index - 1];
  entry.ptr = ptr;
  entry.bytes = bytes;
  entry.depth = static_cast<std::uint32_t>(depth);
  std::copy_n(frames, depth, entry.frames);
  entry.next = g_table.heads[bucket];
  g_table.heads[bucket] = index;
  g_table.live.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Remove(void* ptr) noexcept {
  SpinLockHolder hold(g_table.lock);
  if (g_table.entries == nullptr) return;
  std::uint32_t* link = &g_table.heads[Bucket(ptr)];
  while (*link != 0) {
    Sample& entry = g_table.entries[*link - 1];
    if (entry.ptr == ptr) {
      const std::uint32_t index = *link;
      *link = entry.next;
      entry.ptr = nullptr;
      entry.next = g_table.free_head;
      g_table.free_head = index;
      g_table.live.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    link = &entry.next;
  }
}

std::vector<Sample> Snapshot() {
  BusyScope busy;
  std::vector<Sample> out;
  // Sized before the lock: a free under the lock (of a sampled block) would deadlock.
  out.reserve(g_table.live.load(std::memory_order_relaxed) + 256);
  SpinLockHolder hold(g_table.lock);
  if (g_table.entries == nullptr) return out;
  for (std::uint32_t i = 0; i < g_table.never_used && out.size() < out.capacity(); ++i) {
    if (g_table.entries[i].ptr != nullptr) out.push_back(g_table.entries[i]);
  }
  return out;
}

double EstimatedObjects(std::size_t bytes, std::size_t mean_interval) noexcept {
  if (mean_interval == 0 || bytes == 0) return 1.0;
  return 1.0 / -std::expm1(-static_cast<double>(bytes) / static_cast<double>(mean_interval));
}

double EstimatedBytes(std::size_t bytes, std::size_t mean_interval) noexcept {
  return static_cast<double>(bytes) * EstimatedObjects(bytes, mean_interval);
}

}  // namespace memarena::host::sampler
