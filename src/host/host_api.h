// The host heap's C++-level entry points, shared by HostAllocator() and the drop-in
// (malloc/new override) layer. Usable from a process's first malloc: nothing here needs
// config, static constructors or malloc.
#pragma once

#include <cstddef>

#include "memarena/config.h"

namespace memarena::host {

// `bytes` bytes aligned to `alignment` (a power of two, or 0 for the default 16; the caller
// checks it: the Allocator base class and the drop-in's C rules do, checked mode asserts it).
// nullptr on failure (ceiling reached after releasing free memory, or the OS refused);
// bytes == 0 returns a unique minimal block. Lock-free for small sizes when the thread
// cache has an object.
void* Allocate(std::size_t bytes, std::size_t alignment) noexcept;

// Like Allocate, for an attempt the caller can do without (realloc's headroom): on
// failure it returns nullptr at once, without releasing memory and without counting an
// out-of-memory event.
void* AllocateIfAvailable(std::size_t bytes, std::size_t alignment) noexcept;

// Frees a block from Allocate. nullptr is a no-op. A double free, a pointer inside a
// block and a pointer the heap never handed out are caught (small blocks on the fast path,
// with a mark in the freed object's second word and an object-start check) and handled
// as MEMARENA_CONF on_invalid_free says: abort with a message by default.
void Free(void* ptr) noexcept;

// Allocate and Free without the misuse checks on their fast paths (no freed mark, no
// object-start test): for host_bench only, which prices the checks against them in one
// run. A double or interior free through FreeUnchecked corrupts the heap silently.
void* AllocateUnchecked(std::size_t bytes, std::size_t alignment) noexcept;
void FreeUnchecked(void* ptr) noexcept;

// Bytes usable at `ptr` (at least what was asked); 0 for nullptr and for any pointer that
// is not the start of a live block (inside a block, freed, or not the heap's).
std::size_t UsableSize(const void* ptr) noexcept;

// Handles `ptr`, which UsableSize found not to be a live block, as an invalid `operation`
// (e.g. "realloc"): reports it as on_invalid_free says.
void ReportInvalidPointer(const void* ptr, const char* operation) noexcept;

// True when `ptr` lies in address space the host heap reserved (a pagemap lookup, then
// the list of reservations under the heap lock).
bool Owns(const void* ptr) noexcept;

// Applies the ceiling, the release ratio and the thread-cache size. A ceiling below what
// is held even after releasing free spans is refused with a message on stderr.
void ApplyConfig(const HostConfig& config);

// Returns the calling thread's cached objects to the central lists.
void FlushThreadCache() noexcept;

}  // namespace memarena::host
