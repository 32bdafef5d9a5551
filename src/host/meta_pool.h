// Metadata memory of the host heap (span records, thread caches): carved from OS pages,
// never from malloc, so the heap can serve a process's first malloc. Not counted as held.
#pragma once

#include <cstddef>
#include <new>

#include "host/spin_lock.h"

namespace memarena::host {

// Cache-line alignment, the default: thread caches are hot.
inline constexpr std::size_t kMetaLine = 64;

// Bump allocation from 1 MiB OS chunks; never freed (recycled by the typed pools below).
// `bytes` rounds up to a multiple of `alignment` (a power of two, at most the OS page),
// and the block starts on one. Blocks aligned to 4 KiB or more come from the chunk's top,
// the others from its bottom, so small records share pages; the first 1 KiB of those from a
// reserve in .bss (meta_pool.cc). Returns nullptr when the OS
// refuses memory.
void* MetaAllocate(std::size_t bytes, std::size_t alignment = kMetaLine) noexcept;

// Whether `block` came from the reserve in .bss that serves the first small blocks (tests).
bool InMetaReserve(const void* block) noexcept;

// Bytes of metadata handed out so far, alignment padding included (not the OS chunks they
// come from, whose untouched pages cost nothing).
std::size_t MetaBytes() noexcept;

// Takes and drops every metadata lock (fork handlers).
void MetaLockAll() noexcept;
void MetaUnlockAll() noexcept;

// A free-list pool of T over MetaAllocate, each T `offset` bytes past a boundary of
// `alignment` (offset + sizeof(T) padded to a multiple of it), so no two share a boundary's
// block. Thread-safe; constant-initialized.
template <typename T>
class MetaPool {
 public:
  constexpr explicit MetaPool(std::size_t alignment = kMetaLine, std::size_t offset = 0)
      : alignment_(alignment), offset_(offset) {}

  // A value-initialized T, or nullptr when the OS refuses memory.
  T* New() noexcept {
    void* memory = nullptr;
    {
      SpinLockHolder hold(lock_);
      if (free_ != nullptr) {
        memory = free_;
        free_ = free_->next;
      }
    }
    if (memory == nullptr) {
      memory = MetaAllocate(offset_ + (sizeof(T) < sizeof(Node) ? sizeof(Node) : sizeof(T)),
                            alignment_);
      if (memory != nullptr) memory = static_cast<char*>(memory) + offset_;
    }
    return memory == nullptr ? nullptr : new (memory) T();
  }

  void Delete(T* object) noexcept {
    object->~T();
    Node* node = reinterpret_cast<Node*>(object);
    SpinLockHolder hold(lock_);
    node->next = free_;
    free_ = node;
  }

  SpinLock& lock() noexcept MEMARENA_RETURN_CAPABILITY(lock_) { return lock_; }

 private:
  struct Node {
    Node* next;
  };
  std::size_t alignment_;
  std::size_t offset_;
  SpinLock lock_;
  Node* free_ MEMARENA_GUARDED_BY(lock_) = nullptr;
};

}  // namespace memarena::host
