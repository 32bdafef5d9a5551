// Linux side of platform/stack.h: glibc backtrace, /proc copies and rename(2).
#include "platform/stack.h"

#include <execinfo.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdint>

#include "platform/os.h"

// Bounds of the allocation-entry section, provided by the linker for any section whose name
// is a C identifier. Weak: a program without such code has no section.
extern "C" char __start_memarena_alloc_entry[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_memarena_alloc_entry[] __attribute__((weak, visibility("hidden")));

namespace memarena::platform {
namespace {

bool InAllocationEntry(const void* pc) noexcept {
  const auto address = reinterpret_cast<std::uintptr_t>(pc);
  const auto start = reinterpret_cast<std::uintptr_t>(__start_memarena_alloc_entry);
  const auto stop = reinterpret_cast<std::uintptr_t>(__stop_memarena_alloc_entry);
  return start != 0 && address >= start && address < stop;
}

}  // namespace

void PrepareStackCapture() noexcept {
  void* frames[4];
  backtrace(frames, 4);
}

MEMARENA_ALLOCATION_ENTRY int CaptureStack(void** frames, int max_frames) noexcept {
  constexpr int kMaxRaw = 64;
  constexpr int kMaxAllocatorFrames = 16;
  void* raw[kMaxRaw];
  const int depth = backtrace(raw, kMaxRaw);
  // Starts after the last allocator frame near the top: a sanitizer's backtrace interceptor
  // may sit above CaptureStack, and a Debug build keeps frames a release build inlines.
  int first = 0;
  for (int i = 0; i < depth && i < kMaxAllocatorFrames; ++i) {
    if (InAllocationEntry(raw[i])) first = i + 1;
  }
  int written = 0;
  for (int i = first; i < depth && written < max_frames; ++i) frames[written++] = raw[i];
  return written;
}

bool CopyFileTo(const char* path, int fd) noexcept {
  const int in = open(path, O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  char buffer[4096];
  bool ok = true;
  for (;;) {
    const ssize_t n = read(in, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;
    if (!WriteAll(fd, buffer, static_cast<std::size_t>(n))) {
      ok = false;
      break;
    }
  }
  close(in);
  return ok;
}

bool ReplaceFile(const char* from, const char* to) noexcept { return std::rename(from, to) == 0; }

}  // namespace memarena::platform
