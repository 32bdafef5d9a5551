// Linux side of platform/stack.h: a frame-pointer walk bounded by the thread's stack (glibc
// backtrace where the walk cannot work), /proc copies and rename(2).
#include "platform/stack.h"

#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
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

#if defined(__x86_64__) || defined(__aarch64__)
// Both ABIs keep a frame record {caller's frame pointer, return address} where the frame
// pointer points, so one walk serves both.
constexpr bool kFramePointerWalk = true;
#else
constexpr bool kFramePointerWalk = false;
#endif

// The calling thread's stack [low, high), looked up once per thread: pthread_getattr_np
// allocates (and reads /proc/self/maps on the main thread), which the sampler's busy flag
// makes safe inside malloc. high == 0: not known, the walk is not used.
struct StackBounds {
  std::uintptr_t low = 0;
  std::uintptr_t high = 0;
  bool looked_up = false;
};
thread_local StackBounds t_stack __attribute__((tls_model("initial-exec")));

const StackBounds& ThreadStack() noexcept {
  if (!t_stack.looked_up) {
    t_stack.looked_up = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* base = nullptr;
      std::size_t size = 0;
      if (pthread_attr_getstack(&attr, &base, &size) == 0 && base != nullptr) {
        t_stack.low = reinterpret_cast<std::uintptr_t>(base);
        t_stack.high = t_stack.low + size;
      }
      pthread_attr_destroy(&attr);
    }
  }
  return t_stack;
}

// The walk from this frame, within the thread's stack. -1: the walk cannot run here
// (another architecture, unknown bounds, or a stack that is not the thread's own: a
// coroutine or a signal stack).
int WalkFramePointers(void** raw, int max_raw) noexcept {
  if constexpr (!kFramePointerWalk) return -1;
  const StackBounds& stack = ThreadStack();
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  if (stack.high == 0 || frame < stack.low || frame >= stack.high) return -1;
  return WalkFrameRecords(frame, stack.high, raw, max_raw);
}

}  // namespace

// Each next frame must lie above the current one, below `high` and aligned, so a frame built
// without a frame pointer (whose register then holds anything) ends the walk instead of
// crashing it. Not instrumented: a sanitizer may have poisoned the words between frames.
__attribute__((no_sanitize("address"))) int WalkFrameRecords(std::uintptr_t frame,
                                                             std::uintptr_t high, void** raw,
                                                             int max_raw) noexcept {
  constexpr std::uintptr_t kRecord = 2 * sizeof(void*);
  int depth = 0;
  while (depth < max_raw && frame % sizeof(void*) == 0 && frame + kRecord <= high) {
    const auto* record = reinterpret_cast<void* const*>(frame);
    if (record[1] == nullptr) break;
    raw[depth++] = record[1];
    const auto next = reinterpret_cast<std::uintptr_t>(record[0]);
    if (next <= frame) break;
    frame = next;
  }
  return depth;
}

void PrepareStackCapture() noexcept {
  void* frames[4];
  backtrace(frames, 4);
}

MEMARENA_ALLOCATION_ENTRY int CaptureStack(void** frames, int max_frames) noexcept {
  constexpr int kMaxRaw = 64;
  constexpr int kMaxAllocatorFrames = 16;
  void* raw[kMaxRaw];
  const int max_raw = max_frames + kMaxAllocatorFrames < kMaxRaw ? max_frames + kMaxAllocatorFrames
                                                                 : kMaxRaw;
  int depth = WalkFramePointers(raw, max_raw);
  if (depth < 0) depth = backtrace(raw, max_raw);
  // Starts after the last allocator frame near the top: a sanitizer's backtrace interceptor
  // may sit above CaptureStack, and a Debug build keeps frames a release build inlines
  // (which lie outside the section, between allocator frames that lie in it).
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

bool RemoveFile(const char* path) noexcept { return unlink(path) == 0; }

}  // namespace memarena::platform
