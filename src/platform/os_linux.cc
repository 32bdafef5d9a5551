// Linux implementation of the OS contract in os.h.
#include "platform/os.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace memarena::platform {

namespace {

constexpr std::size_t kNotRead = ~std::size_t{0};

// A value read from the system once, kept in an atomic rather than a function-local static:
// a static's guard held by a thread that is still reading when another thread forks stays
// held in the child, whose first call then waits for it forever (a child forked during the
// first 1 MiB block's sysfs read, HostForkDeathTest under TSAN). Two threads may both read;
// their reads agree.
template <typename Read>
std::size_t ReadOnce(std::atomic<std::size_t>& cache, Read read) noexcept {
  std::size_t value = cache.load(std::memory_order_relaxed);
  if (value == kNotRead) [[unlikely]] {
    value = read();
    cache.store(value, std::memory_order_relaxed);
  }
  return value;
}

}  // namespace

std::size_t PageSize() noexcept {
  // From the auxiliary vector rather than sysconf: sysconf's code and its jump table sit in
  // libc pages a program that uses glibc's malloc never touches, and the drop-in asks at
  // start-up, so each would cost a 64 KiB fault-around window (docs/host.md, "Start-up
  // footprint of the drop-in"). The kernel always passes AT_PAGESZ; sysconf is the fallback.
  static constinit std::atomic<std::size_t> page{kNotRead};
  return ReadOnce(page, [] {
    const unsigned long from_kernel = getauxval(AT_PAGESZ);
    return static_cast<std::size_t>(from_kernel != 0 ? from_kernel : sysconf(_SC_PAGESIZE));
  });
}

namespace {

// Maps `size` bytes with `protection` at a multiple of `alignment`. Over-maps by
// alignment - page, then trims both ends, so the result is aligned without relying on the
// kernel's placement.
void* MapAligned(std::size_t size, std::size_t alignment, int protection) noexcept {
  if (size == 0) return nullptr;
  const std::size_t page = PageSize();
  if (alignment < page) alignment = page;
  const std::size_t extra = alignment - page;
  if (size + extra < size) return nullptr;
  void* raw = mmap(nullptr, size + extra, protection,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + alignment - 1) & ~(std::uintptr_t{alignment} - 1);
  const std::size_t head = aligned - start;
  const std::size_t tail = extra - head;
  if (head != 0) munmap(raw, head);
  if (tail != 0) munmap(reinterpret_cast<void*>(aligned + size), tail);
  return reinterpret_cast<void*>(aligned);
}

}  // namespace

void* MapPages(std::size_t size, std::size_t alignment) noexcept {
  return MapAligned(size, alignment, PROT_READ | PROT_WRITE);
}

void* MapPagesAt(void* addr, std::size_t size) noexcept {
#ifndef MAP_FIXED_NOREPLACE
  constexpr int MAP_FIXED_NOREPLACE = 0x100000;  // Linux 4.17's value; older headers lack it
#endif
  if (addr == nullptr || size == 0) return nullptr;
  void* got = mmap(addr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (got == MAP_FAILED) return nullptr;
  if (got != addr) {
    munmap(got, size);
    return nullptr;
  }
  return got;
}

void* ReserveAddressSpace(std::size_t size, std::size_t alignment) noexcept {
  return MapAligned(size, alignment, PROT_NONE);
}

bool CommitPages(void* ptr, std::size_t size) noexcept {
  return ptr != nullptr && size != 0 && mprotect(ptr, size, PROT_READ | PROT_WRITE) == 0;
}

void UncommitPages(void* ptr, std::size_t size) noexcept {
  if (ptr == nullptr || size == 0) return;
  // MAP_FIXED over the range drops its pages and its commit charge in one call; the range
  // is never left unmapped, so no other mapping can land in it meanwhile.
  mmap(ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

void UnmapPages(void* ptr, std::size_t size) noexcept {
  if (ptr != nullptr && size != 0) munmap(ptr, size);
}

bool DecommitPages(void* ptr, std::size_t size) noexcept {
  return ptr == nullptr || size == 0 || madvise(ptr, size, MADV_DONTNEED) == 0;
}

void AdviseHugePages(void* ptr, std::size_t size, bool huge) noexcept {
  if (ptr != nullptr && size != 0) madvise(ptr, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

namespace {

// Maps [ptr, ptr + size) again as fresh zero pages, as MapPages maps them, or dies: a heap
// range left unmapped would fault at its next use, far from here.
void MapAgainOrDie(void* ptr, std::size_t size) noexcept {
  void* again = mmap(ptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  if (again == ptr) return;
  static constexpr char kMessage[] =
      "memarena: after moving free pages with mremap, a heap range could not be mapped again "
      "(mmap failed: the process is out of memory or at vm.max_map_count mappings; the heap "
      "pauses moves above 4096 mappings, so raise vm.max_map_count or lower the process's "
      "own mapping count)\n";
  WriteStderr(kMessage, sizeof kMessage - 1);
  std::abort();
}

}  // namespace

bool MovePages(void* from, void* to, std::size_t size) noexcept {
  if (from == nullptr || to == nullptr || size == 0) return false;
  if (mremap(from, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to) {
    // A kernel may have unmapped the destination before it refused the source (mremap_to
    // unmaps first, then checks that the source lies in one mapping).
    MapAgainOrDie(to, size);
    return false;
  }
  MapAgainOrDie(from, size);
  return true;
}

bool RemapPages(void* ptr, std::size_t size) noexcept {
  if (ptr == nullptr || size == 0) return true;
  MapAgainOrDie(ptr, size);
  unsigned char resident = 0;
  return mincore(ptr, PageSize(), &resident) != 0 || (resident & 1) == 0;
}

// Raw system calls: the page heap calls this under its lock, and a preloaded library that
// wraps open or read (and allocates in its wrapper) would re-enter the heap there.
std::size_t CountMappings() noexcept {
  const long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t lines = 0;
  char buffer[4096];
  for (;;) {
    const long got = syscall(SYS_read, fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    lines += static_cast<std::size_t>(std::count(buffer, buffer + got, '\n'));
  }
  syscall(SYS_close, fd);
  return lines;
}

bool PopulateForWrite(void* ptr, std::size_t size) noexcept {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14's value; older headers lack it
#endif
  return ptr != nullptr && size != 0 && madvise(ptr, size, MADV_POPULATE_WRITE) == 0;
}

std::uint64_t BasePageFaultNanos(std::size_t pages) noexcept {
  const std::size_t page = PageSize();
  if (pages == 0) return 0;
  void* map = mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (map == MAP_FAILED) return 0;
  auto* bytes = static_cast<volatile unsigned char*>(map);
  // Under THP "always" a map merged with a neighbour may cover a whole huge page.
  madvise(map, pages * page, MADV_NOHUGEPAGE);
  const std::uint64_t start = ThreadCpuNanos();
  for (std::size_t i = 0; i < pages; ++i) bytes[i * page] = 1;
  const std::uint64_t nanos = ThreadCpuNanos() - start;
  munmap(map, pages * page);
  return nanos / pages;
}

namespace {

// Reads a small /proc file into `buf` without allocating; returns bytes read or -1.
long ReadSmallFile(const char* path, char* buf, std::size_t cap) noexcept {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

}  // namespace

std::size_t HugePageSize() noexcept {
  static constinit std::atomic<std::size_t> size{kNotRead};
  return ReadOnce(size, [] {
    char buf[128];
    // "always [madvise] never": the brackets mark the mode in force.
    if (ReadSmallFile("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) <= 0 ||
        std::strstr(buf, "[never]") != nullptr) {
      return std::size_t{0};
    }
    if (ReadSmallFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", buf, sizeof buf) <= 0) {
      return std::size_t{0};
    }
    const unsigned long long bytes = std::strtoull(buf, nullptr, 10);
    // Only a power of two above the page size can be an alignment.
    const bool usable = bytes > PageSize() && (bytes & (bytes - 1)) == 0;
    return usable ? static_cast<std::size_t>(bytes) : std::size_t{0};
  });
}

std::size_t ResidentBytes() noexcept {
  char buf[256];
  if (ReadSmallFile("/proc/self/statm", buf, sizeof buf) <= 0) return 0;
  // statm: size resident shared text lib data dt (in pages).
  char* p = buf;
  std::strtoull(p, &p, 10);
  const unsigned long long resident = std::strtoull(p, &p, 10);
  return static_cast<std::size_t>(resident) * PageSize();
}

std::size_t PeakResidentBytes() noexcept {
  char buf[4096];
  if (ReadSmallFile("/proc/self/status", buf, sizeof buf) <= 0) return 0;
  const char* line = std::strstr(buf, "VmHWM:");
  if (line == nullptr) return 0;
  char* end = nullptr;
  const unsigned long long kib = std::strtoull(line + 6, &end, 10);
  return static_cast<std::size_t>(kib) * 1024;
}

std::size_t ResidentBytesIn(const void* ptr, std::size_t size) noexcept {
  if (size == 0) return 0;
  const std::size_t page = PageSize();
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(ptr) & ~(page - 1);
  const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(ptr) + size + page - 1) & ~(page - 1);
  // A fixed vector on the stack: this layer never allocates.
  constexpr std::size_t kPagesPerCall = 4096;
  unsigned char vec[kPagesPerCall];
  std::size_t resident = 0;
  for (std::uintptr_t at = first; at < end;) {
    const std::size_t pages = std::min<std::size_t>((end - at) / page, kPagesPerCall);
    if (mincore(reinterpret_cast<void*>(at), pages * page, vec) == 0) {
      for (std::size_t i = 0; i < pages; ++i) resident += (vec[i] & 1) ? page : 0;
      at += pages * page;
    } else {
      // Part of the batch is unmapped (ENOMEM): ask page by page; a refused page counts 0.
      if (mincore(reinterpret_cast<void*>(at), page, vec) == 0 && (vec[0] & 1)) resident += page;
      at += page;
    }
  }
  return resident;
}

std::size_t ProcessCommandLine(char* buf, std::size_t size) noexcept {
  if (size == 0) return 0;
  const long n = ReadSmallFile("/proc/self/cmdline", buf, size);
  if (n <= 0) {
    buf[0] = '\0';
    return 0;
  }
  std::size_t length = static_cast<std::size_t>(n);
  while (length > 0 && buf[length - 1] == '\0') --length;  // the last argument's terminator
  for (std::size_t i = 0; i < length; ++i) {
    if (buf[i] == '\0') buf[i] = ' ';
  }
  buf[length] = '\0';
  return length;
}

long ProcessId() noexcept { return static_cast<long>(getpid()); }

const char* GetEnv(const char* name) noexcept { return std::getenv(name); }

void* FindSymbol(const char* name) noexcept { return dlsym(RTLD_DEFAULT, name); }

void* FindSymbolInLoadedLibrary(const char* soname, const char* name) noexcept {
  void* library = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
  if (library == nullptr) return nullptr;
  void* symbol = dlsym(library, name);
  dlclose(library);  // drops only the reference RTLD_NOLOAD took
  return symbol;
}

LibcHeapBytes ReadLibcHeap() noexcept {
  const struct mallinfo2 info = mallinfo2();
  return {.in_use = info.uordblks + info.hblkhd, .held = info.arena + info.hblkhd};
}

void WriteStderr(const char* text, std::size_t size) noexcept {
  WriteAll(STDERR_FILENO, text, size);
}

int DuplicateStderr() noexcept { return fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 10); }

void StartWithSignalsBlocked(void (*start)(void* arg), void* arg) {
  sigset_t all;
  sigset_t saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  try {
    start(arg);
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
}

void OnFork(void (*prepare)(), void (*parent)(), void (*child)()) noexcept {
  pthread_atfork(prepare, parent, child);
}

bool OnThreadExit(void (*fn)(void*), void* arg) noexcept {
  // One key per distinct destructor, in a fixed table (allocation-free), and no lock: a
  // thread that finds no ready key for `fn` claims an empty slot and creates one itself.
  // With a lock, a thread creating the process's first key (its first thread cache) when
  // another thread forked left the lock held in the child, whose first cache then waited
  // for it forever. A key another thread is creating is waited for a bounded time only
  // (kCreateWaitYields; in a forked child its creator is gone), so threads that start
  // together share one key, and each thread's `fn` runs once for the key it set even when
  // a race leaves two.
  enum : int { kEmpty, kCreating, kReady };
  constexpr int kCreateWaitYields = 1000;
  struct Slot {
    std::atomic<int> state{kEmpty};
    void (*fn)(void*) = nullptr;  // written before state becomes kReady
    pthread_key_t key{};
  };
  static Slot slots[8];
  for (int yields = 0;; ++yields) {
    bool creating = false;
    for (Slot& slot : slots) {
      const int state = slot.state.load(std::memory_order_acquire);
      if (state == kReady && slot.fn == fn) return pthread_setspecific(slot.key, arg) == 0;
      creating |= state == kCreating;
    }
    if (!creating || yields == kCreateWaitYields) break;
    sched_yield();
  }
  for (Slot& slot : slots) {
    int expected = kEmpty;
    if (!slot.state.compare_exchange_strong(expected, kCreating, std::memory_order_acquire)) {
      continue;
    }
    if (pthread_key_create(&slot.key, fn) != 0) {
      slot.state.store(kEmpty, std::memory_order_release);
      return false;
    }
    slot.fn = fn;
    slot.state.store(kReady, std::memory_order_release);
    return pthread_setspecific(slot.key, arg) == 0;
  }
  return false;
}

std::uint64_t ThreadId() noexcept { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

void YieldCpu() noexcept { sched_yield(); }

namespace {

std::uint64_t ClockNanos(clockid_t clock) noexcept {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

std::uint64_t NowNanos() noexcept { return ClockNanos(CLOCK_MONOTONIC); }

std::uint64_t ThreadCpuNanos() noexcept { return ClockNanos(CLOCK_THREAD_CPUTIME_ID); }

}  // namespace memarena::platform

namespace memarena::platform {

int OpenForWrite(const char* path) noexcept {
  return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

bool WriteAll(int fd, const char* data, std::size_t size) noexcept {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

void CloseFile(int fd) noexcept {
  if (fd >= 0) close(fd);
}

}  // namespace memarena::platform
