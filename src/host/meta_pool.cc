// The metadata bump allocator behind MetaPool.
#include "host/meta_pool.h"

#include <atomic>
#include <cstdint>

#include "platform/os.h"

namespace memarena::host {
namespace {

constexpr std::size_t kMetaChunk = std::size_t{1} << 20;
// Alignments from this up come from a chunk's top (MetaAllocate). No OS page is smaller.
constexpr std::size_t kMetaPage = 4096;

// The first small blocks come from a reserve in .bss, on the page of the small globals that
// every process writes anyway (libmemarena_malloc_startup.ld; DropinFootprint.
// TheSmallGlobalsShareOnePage): a small program's span records, 10 to 12 of them, then dirty
// no page of a chunk. 1 KiB of the 1.1 KiB that page had left.
constexpr std::size_t kReserveBytes = 1024;

struct MetaArena {
  SpinLock lock;
  char* next MEMARENA_GUARDED_BY(lock) = nullptr;
  char* end MEMARENA_GUARDED_BY(lock) = nullptr;
  std::size_t reserve_used MEMARENA_GUARDED_BY(lock) = 0;
  std::atomic<std::size_t> bytes{0};
};

constinit MetaArena g_meta;
alignas(kMetaLine) constinit char g_meta_reserve[kReserveBytes] = {};

// A block of the reserve, or nullptr when what is left does not hold it.
char* TakeFromReserve(std::size_t bytes, std::size_t alignment) noexcept
    MEMARENA_REQUIRES(g_meta.lock) {
  const auto base = reinterpret_cast<std::uintptr_t>(g_meta_reserve);
  const std::uintptr_t next = base + g_meta.reserve_used;
  const std::uintptr_t start = (next + alignment - 1) & ~(alignment - 1);
  if (start + bytes > base + kReserveBytes) return nullptr;
  g_meta.reserve_used = start + bytes - base;
  g_meta.bytes.fetch_add(start + bytes - next, std::memory_order_relaxed);
  return reinterpret_cast<char*>(start);
}

}  // namespace

void* MetaAllocate(std::size_t bytes, std::size_t alignment) noexcept {
  bytes = (bytes + alignment - 1) & ~(alignment - 1);
  SpinLockHolder hold(g_meta.lock);
  // Page-aligned blocks (thread caches) come down from the chunk's top, the others go up
  // from its bottom: a page-aligned block taken from the bottom skipped to the next page,
  // and the small records after it started another, so a small program wrote four pages of
  // its first chunk (span records, two of thread cache, span records) instead of three.
  const bool from_top = alignment >= kMetaPage;
  if (!from_top) {
    if (char* reserved = TakeFromReserve(bytes, alignment)) return reserved;
  }
  std::size_t padding = 0;
  char* result = nullptr;
  if (g_meta.next != nullptr) {
    const auto next = reinterpret_cast<std::uintptr_t>(g_meta.next);
    const auto end = reinterpret_cast<std::uintptr_t>(g_meta.end);
    if (from_top) {
      const std::uintptr_t start = end >= bytes ? (end - bytes) & ~(alignment - 1) : 0;
      if (start >= next) {
        result = reinterpret_cast<char*>(start);
        padding = end - (start + bytes);
        g_meta.end = result;
      }
    } else {
      const std::uintptr_t start = (next + alignment - 1) & ~(alignment - 1);
      if (start <= end && end - start >= bytes) {
        result = reinterpret_cast<char*>(start);
        padding = start - next;
        g_meta.next = result + bytes;
      }
    }
  }
  if (result == nullptr) {  // the rest of the chunk is dropped
    const std::size_t chunk = bytes > kMetaChunk ? bytes : kMetaChunk;
    char* const memory = static_cast<char*>(platform::MapPages(chunk, 0));
    if (memory == nullptr) return nullptr;
    // The chunk is page-aligned and `bytes` a multiple of `alignment`: no padding.
    result = from_top ? memory + chunk - bytes : memory;
    g_meta.next = from_top ? memory : memory + bytes;
    g_meta.end = from_top ? result : memory + chunk;
  }
  // What is handed out, not the chunks mapped: a chunk's pages cost memory only once
  // written, and a small program used about 70 KiB of its first 1 MiB chunk, which the
  // stats had reported as 1 MiB of metadata.
  g_meta.bytes.fetch_add(padding + bytes, std::memory_order_relaxed);
  return result;
}

std::size_t MetaBytes() noexcept { return g_meta.bytes.load(std::memory_order_relaxed); }

bool InMetaReserve(const void* block) noexcept {
  const auto at = reinterpret_cast<std::uintptr_t>(block);
  const auto base = reinterpret_cast<std::uintptr_t>(g_meta_reserve);
  return at >= base && at < base + kReserveBytes;
}

// Fork handlers: taken in one call, dropped in another.
void MetaLockAll() noexcept MEMARENA_NO_THREAD_SAFETY_ANALYSIS { g_meta.lock.lock(); }
void MetaUnlockAll() noexcept MEMARENA_NO_THREAD_SAFETY_ANALYSIS { g_meta.lock.unlock(); }

}  // namespace memarena::host
