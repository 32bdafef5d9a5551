// Call stacks for the heap sampler and the file helpers its profiles need: capture without
// allocating, the "allocation entry" code section that profiles hide, atomic replace.
#pragma once

#include <cstddef>
#include <cstdint>

// Puts a function in the memarena_alloc_entry section. Leading stack frames that lie in
// this section (the allocator's own entry points, whatever the compiler inlined or
// tail-called) are dropped from sampled stacks, so a profile starts at the caller (after
// gperftools' google_malloc section).
#define MEMARENA_ALLOCATION_ENTRY __attribute__((section("memarena_alloc_entry"), noinline))

namespace memarena::platform {

// Loads the unwinder (glibc's backtrace dlopens libgcc_s and allocates on its first call).
// Call once from an ordinary context before CaptureStack may run inside malloc.
void PrepareStackCapture() noexcept;

// Writes up to `max_frames` return addresses of the calling thread, innermost first,
// starting after the last MEMARENA_ALLOCATION_ENTRY frame among the innermost 16.
// Returns how many it wrote. Does not allocate once PrepareStackCapture ran.
int CaptureStack(void** frames, int max_frames) noexcept;

// Follows a chain of frame records {next frame, return address} from `frame` (the
// x86-64 and AArch64 layout), writing up to `max_raw` return addresses. Stops at a null
// return address or at a next frame that is not above the current one, not aligned, or
// whose record would end past `high` (the top of the stack), so it never reads outside
// [frame, high). CaptureStack runs it from its own frame; exposed for the tests.
int WalkFrameRecords(std::uintptr_t frame, std::uintptr_t high, void** raw, int max_raw) noexcept;

// Copies the file at `path` (e.g. /proc/self/maps) to `fd` with a stack buffer; false on
// an error. Does not allocate.
bool CopyFileTo(const char* path, int fd) noexcept;

// rename(2): replaces `to` by `from` atomically (same file system); false on an error.
bool ReplaceFile(const char* from, const char* to) noexcept;

// unlink(2); false on an error.
bool RemoveFile(const char* path) noexcept;

}  // namespace memarena::platform
