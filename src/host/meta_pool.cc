// The metadata bump allocator behind MetaPool.
#include "host/meta_pool.h"

#include <atomic>
#include <cstdint>

#include "platform/os.h"

namespace memarena::host {
namespace {

constexpr std::size_t kMetaChunk = std::size_t{1} << 20;

struct MetaArena {
  SpinLock lock;
  char* next MEMARENA_GUARDED_BY(lock) = nullptr;
  char* end MEMARENA_GUARDED_BY(lock) = nullptr;
  std::atomic<std::size_t> bytes{0};
};

constinit MetaArena g_meta;

}  // namespace

void* MetaAllocate(std::size_t bytes, std::size_t alignment) noexcept {
  bytes = (bytes + alignment - 1) & ~(alignment - 1);
  SpinLockHolder hold(g_meta.lock);
  // Padding that reaches past the chunk's end is dropped with the chunk's rest.
  char* const unpadded = g_meta.next;
  g_meta.next = reinterpret_cast<char*>(
      (reinterpret_cast<std::uintptr_t>(g_meta.next) + alignment - 1) & ~(alignment - 1));
  std::size_t padding = static_cast<std::size_t>(g_meta.next - unpadded);
  if (g_meta.next > g_meta.end || static_cast<std::size_t>(g_meta.end - g_meta.next) < bytes) {
    const std::size_t chunk = bytes > kMetaChunk ? bytes : kMetaChunk;
    void* memory = platform::MapPages(chunk, 0);
    if (memory == nullptr) return nullptr;
    g_meta.next = static_cast<char*>(memory);
    g_meta.end = g_meta.next + chunk;
    padding = 0;
  }
  // What is handed out, not the chunks mapped: a chunk's pages cost memory only once
  // written, and a small program used about 70 KiB of its first 1 MiB chunk, which the
  // stats had reported as 1 MiB of metadata.
  g_meta.bytes.fetch_add(padding + bytes, std::memory_order_relaxed);
  void* result = g_meta.next;
  g_meta.next += bytes;
  return result;
}

std::size_t MetaBytes() noexcept { return g_meta.bytes.load(std::memory_order_relaxed); }

// Fork handlers: taken in one call, dropped in another.
void MetaLockAll() noexcept MEMARENA_NO_THREAD_SAFETY_ANALYSIS { g_meta.lock.lock(); }
void MetaUnlockAll() noexcept MEMARENA_NO_THREAD_SAFETY_ANALYSIS { g_meta.lock.unlock(); }

}  // namespace memarena::host
