// The sampled-block table (fixed capacity, OS pages; entries found through the sampled
// span's record, written and read under a per-entry sequence count) and the per-thread
// exponential draw of the next sampling point.
#include "host/heap_sampler.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <numbers>
#include <utility>

#include "host/spin_lock.h"
#include "platform/cpu.h"
#include "platform/os.h"
#include "platform/stack.h"

namespace memarena::host::sampler {
namespace {

// 32768 live samples cover 16 GiB of live memory at the default 512 KiB mean.
constexpr std::uint32_t kCapacity = 1u << 15;

// One sampled block. Plain fields in mapped pages, accessed through std::atomic_ref: the
// block's owner writes them (release stores, plain moves on x86) while Snapshot may read.
struct Slot {
  std::uint32_t seq;  // even: stable; odd: being written
  std::uint32_t depth;
  void* ptr;  // nullptr: free
  std::size_t bytes;
  std::uint32_t next_free;  // the shared free list (index + 1), only under the table's lock
  void* frames[kMaxFrames];
};

template <typename T>
std::atomic_ref<T> Ref(T& field) noexcept {
  return std::atomic_ref<T>(field);
}

struct Table {
  SpinLock lock;
  std::atomic<Slot*> slots{nullptr};  // kCapacity, mapped on first use (under the lock)
  // Entries below this were handed out at least once (Snapshot scans them).
  std::atomic<std::uint32_t> used{0};
  // Free entries (index + 1), chained through Slot::next_free.
  std::uint32_t free_head MEMARENA_GUARDED_BY(lock) = 0;
};
constinit Table g_table;
constinit std::atomic<std::size_t> g_mean{0};
constinit std::atomic<std::uint64_t> g_epoch{0};
constinit std::atomic<std::uint64_t> g_thread_seeds{0};

thread_local bool t_busy __attribute__((tls_model("initial-exec"))) = false;
thread_local std::uint64_t t_rng __attribute__((tls_model("initial-exec"))) = 0;
// -ln(U) for this thread's next interval, drawn one interval ahead (see NextInterval).
thread_local double t_next_draw __attribute__((tls_model("initial-exec"))) = 0.0;

// Sets t_busy for a scope: allocations made meanwhile (by the unwinder, by a copy) are
// neither sampled nor able to re-enter the table's lock.
class BusyScope {
 public:
  BusyScope() noexcept { t_busy = true; }
  ~BusyScope() { t_busy = false; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;
};

Slot* MapSlots() noexcept MEMARENA_REQUIRES(g_table.lock) {
  if (Slot* slots = g_table.slots.load(std::memory_order_relaxed)) return slots;
  const std::size_t page = platform::PageSize();
  const std::size_t bytes = (sizeof(Slot) * kCapacity + page - 1) / page * page;
  auto* slots = static_cast<Slot*>(platform::MapPages(bytes, page));
  if (slots != nullptr) g_table.slots.store(slots, std::memory_order_release);
  return slots;
}

// A free entry from the shared list, or one never used; 0 when the table is full.
std::uint32_t TakeEntry() noexcept {
  SpinLockHolder hold(g_table.lock);
  Slot* slots = MapSlots();
  if (slots == nullptr) return 0;
  if (const std::uint32_t entry = g_table.free_head; entry != 0) {
    g_table.free_head = slots[entry - 1].next_free;
    return entry;
  }
  const std::uint32_t used = g_table.used.load(std::memory_order_relaxed);
  if (used == kCapacity) return 0;
  g_table.used.store(used + 1, std::memory_order_release);
  return used + 1;
}

void GiveBack(std::uint32_t entry) noexcept {
  SpinLockHolder hold(g_table.lock);
  g_table.slots.load(std::memory_order_relaxed)[entry - 1].next_free = g_table.free_head;
  g_table.free_head = entry;
}

// The writer's half of the sequence count: odd while the fields change. Release stores
// keep the odd count ahead of every field, so a reader that saw any new field sees the
// count move (no fence, which TSAN does not model).
void Write(Slot& slot, void* ptr, std::size_t bytes, void* const* frames, int depth) noexcept {
  const std::uint32_t seq = Ref(slot.seq).load(std::memory_order_relaxed);
  Ref(slot.seq).store(seq + 1, std::memory_order_relaxed);
  Ref(slot.ptr).store(ptr, std::memory_order_release);
  Ref(slot.bytes).store(bytes, std::memory_order_release);
  Ref(slot.depth).store(static_cast<std::uint32_t>(depth), std::memory_order_release);
  for (int i = 0; i < depth; ++i) Ref(slot.frames[i]).store(frames[i], std::memory_order_release);
  Ref(slot.seq).store(seq + 2, std::memory_order_release);
}

// The reader's half: a copy taken while the count stayed even and unchanged. False for a
// free entry, or one its owner kept rewriting through every attempt (a block being
// allocated or freed right now).
bool Read(Slot& slot, Sample& out) noexcept {
  constexpr int kAttempts = 64;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const std::uint32_t before = Ref(slot.seq).load(std::memory_order_acquire);
    if (before % 2 == 0) {
      out.ptr = Ref(slot.ptr).load(std::memory_order_acquire);
      if (out.ptr == nullptr) return false;
      out.bytes = Ref(slot.bytes).load(std::memory_order_acquire);
      out.depth = std::min<std::uint32_t>(Ref(slot.depth).load(std::memory_order_acquire),
                                          kMaxFrames);
      for (std::uint32_t i = 0; i < out.depth; ++i) {
        out.frames[i] = Ref(slot.frames[i]).load(std::memory_order_acquire);
      }
      if (Ref(slot.seq).load(std::memory_order_relaxed) == before) return true;
    }
    platform::CpuRelax();
  }
  return false;
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

double NegativeLog(double u) noexcept {
  // u = m * 2^e with m in [sqrt(1/2), sqrt(2)): ln u = e ln 2 + ln m, and ln m is
  // 2 atanh(t) = 2 (t + t^3/3 + t^5/5 + ...) with t = (m - 1) / (m + 1), |t| < 0.172, so six
  // terms leave an error below 2e-11 (the next term is 2 t^13 / 13).
  constexpr std::uint64_t kMantissa = (std::uint64_t{1} << 52) - 1;
  constexpr std::uint64_t kSqrt2Mantissa = std::bit_cast<std::uint64_t>(std::numbers::sqrt2) & kMantissa;
  const auto bits = std::bit_cast<std::uint64_t>(u);
  // Integer selects, not a branch: the draw is uniform, so a branch on the mantissa would
  // mispredict half the time. A mantissa above sqrt(2)'s halves m and raises e.
  const std::uint64_t upper = (bits & kMantissa) > kSqrt2Mantissa ? 1 : 0;
  const auto exponent = static_cast<std::int64_t>((bits >> 52) - 1023 + upper);  // u > 0
  const double m = std::bit_cast<double>((bits & kMantissa) | ((1023 - upper) << 52));
  const double t = (m - 1.0) / (m + 1.0);
  const double t2 = t * t;
  const double series =
      t * (2.0 + t2 * (2.0 / 3 + t2 * (2.0 / 5 + t2 * (2.0 / 7 + t2 * (2.0 / 9 + t2 * (2.0 / 11))))));
  return -(static_cast<double>(exponent) * std::numbers::ln2 + series);
}

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
  if (t_rng == 0) t_next_draw = NegativeLog(UniformOpen());  // the thread's first draw
  const double draw = t_next_draw * static_cast<double>(mean);
  // The draw after this one is only stored: its chain of ~80 dependent cycles (a random
  // step, a divide, a polynomial) then holds up neither this interval's countdown nor
  // the work that follows.
  t_next_draw = NegativeLog(UniformOpen());
  return static_cast<std::int64_t>(std::min(draw, 1e18));
}

bool Busy() noexcept { return t_busy; }

MEMARENA_ALLOCATION_ENTRY std::uint32_t Record(void* ptr, std::size_t bytes,
                                               std::uint32_t* spare) noexcept {
  if (t_busy) return 0;
  BusyScope busy;
  const std::uint32_t entry = spare != nullptr && *spare != 0 ? std::exchange(*spare, 0u)
                                                              : TakeEntry();
  if (entry == 0) return 0;
  // Captured into a local array: the entry's frames are written one release store each
  // (only the captured ones; a whole entry is 288 bytes).
  void* frames[kMaxFrames];
  const int depth = platform::CaptureStack(frames, kMaxFrames);
  Write(g_table.slots.load(std::memory_order_acquire)[entry - 1], ptr, bytes, frames, depth);
  return entry;
}

void Remove(std::uint32_t entry, std::uint32_t* spare) noexcept {
  // The table is mapped: it handed out `entry`.
  Write(g_table.slots.load(std::memory_order_acquire)[entry - 1], nullptr, 0, nullptr, 0);
  if (spare != nullptr && *spare == 0) {
    *spare = entry;
    return;
  }
  GiveBack(entry);
}

void ReleaseSpare(std::uint32_t* spare) noexcept {
  if (*spare != 0) GiveBack(std::exchange(*spare, 0u));
}

void LockForFork() noexcept MEMARENA_NO_THREAD_SAFETY_ANALYSIS { g_table.lock.lock(); }

void UnlockAfterFork() noexcept MEMARENA_NO_THREAD_SAFETY_ANALYSIS { g_table.lock.unlock(); }

// Cold: never runs at start-up, so it stays out of .text.memarena_startup (docs/dropin.md).
[[gnu::cold]] std::vector<Sample> Snapshot() {
  BusyScope busy;
  std::vector<Sample> out;
  Slot* slots = g_table.slots.load(std::memory_order_acquire);
  if (slots == nullptr) return out;
  const std::uint32_t used = g_table.used.load(std::memory_order_acquire);
  Sample sample;
  for (std::uint32_t i = 0; i < used; ++i) {
    if (Read(slots[i], sample)) out.push_back(sample);
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
