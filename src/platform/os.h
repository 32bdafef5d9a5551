// The whole OS contract of memarena in one header (after mimalloc's prim.h). Every syscall
// and OS #if lives behind these functions; no other layer talks to the OS.
//
// Preconditions common to all: sizes are multiples of PageSize() unless stated; none of
// these functions allocates heap memory, so the drop-in malloc may call them at any time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memarena::platform {

// The OS page size in bytes (4096 on x86-64 Linux). Cached after the first call.
std::size_t PageSize() noexcept;

// Reserves and commits `size` bytes of zeroed, read-write address space whose start is a
// multiple of `alignment` (a power of two >= PageSize()). Returns nullptr on failure
// (ENOMEM, or the address-space limit); never throws.
void* MapPages(std::size_t size, std::size_t alignment) noexcept;

// Maps `size` bytes of zeroed, read-write memory at exactly `addr` (page-aligned), unless
// part of the range is mapped already: then nullptr, and nothing changes
// (MAP_FIXED_NOREPLACE, Linux 4.17; an older kernel takes `addr` as a hint, and an answer
// elsewhere is unmapped and refused). Release with UnmapPages.
void* MapPagesAt(void* addr, std::size_t size) noexcept;

// Returns a range obtained from MapPages (or a page-aligned part of one) to the OS.
void UnmapPages(void* ptr, std::size_t size) noexcept;

// Drops the physical pages behind a mapped range (MADV_DONTNEED): RSS falls at once,
// the range stays mapped and reads back as zeros when touched again. False when the kernel
// kept them (locked pages, as under mlockall: EINVAL); they then keep their old bytes.
bool DecommitPages(void* ptr, std::size_t size) noexcept;

// The size of a transparent huge page (the PMD size: 2 MiB on x86-64) when the kernel backs
// memory with them on request (THP mode "madvise" or "always"); 0 when it never does (mode
// "never", or no THP). Read from sysfs on the first call, then cached.
std::size_t HugePageSize() noexcept;

// Asks the kernel to back the mapped, page-aligned range with transparent huge pages from its
// next page faults on (MADV_HUGEPAGE), or never to (MADV_NOHUGEPAGE). A hint: a kernel
// without THP refuses it, and that is ignored. Pages already mapped stay as they are.
void AdviseHugePages(void* ptr, std::size_t size, bool huge) noexcept;

// Moves the physical pages behind the committed range [from, from + size) to [to, to + size)
// without copying or faulting (mremap): `to` then holds the bytes `from` held, in a mapping
// of its own that the kernel does not merge with its neighbours (its pages keep their
// first address's offset), and `from` is mapped again as RemapPages leaves a range. Both
// ranges are page-aligned, apart, and inside mappings of MapPages whose pages the caller
// owns; what `to` held is dropped. False when the kernel refused (`from` spans two
// mappings); then `from` is as it was and `to` is fresh zero pages. Dies when a range
// cannot be mapped again: the heap would fault there later.
bool MovePages(void* from, void* to, std::size_t size) noexcept;

// DecommitPages by mapping the range again (MAP_FIXED) as MapPages maps it: fresh zero
// pages with no advice (AdviseHugePages) on them, which the kernel merges with neighbours
// that were never moved, so the split mappings MovePages leaves are mended as they are
// given back. False when the new pages came resident: the process locks its future
// mappings (mlockall with MCL_FUTURE), so this frees nothing. Dies as MovePages does.
bool RemapPages(void* ptr, std::size_t size) noexcept;

// The process's memory mappings (lines of /proc/self/maps; the kernel allows
// vm.max_map_count, 65,530 by default), or 0 when they cannot be read. Allocation-free; it
// reads the whole list, about 0.1 ms per thousand mappings, by raw system calls (no
// wrapper another preloaded library could interpose).
std::size_t CountMappings() noexcept;

// Maps the pages of a committed, page-aligned range as a write would (MADV_POPULATE_WRITE),
// without writing: pages already mapped keep their contents, and an anonymous page in a
// range advised for huge pages comes as the whole huge page around it. False when the
// kernel cannot (before Linux 5.14: EINVAL) or fails to (ENOMEM).
bool PopulateForWrite(void* ptr, std::size_t size) noexcept;

// What a first write to a base page costs here, in the calling thread's CPU time: maps
// `pages` fresh pages of its own (kept out of huge pages), writes one byte to each, unmaps
// them, and returns the mean nanoseconds per page; 0 when the map fails. The trap, the
// kernel's zeroing and, in a virtual machine, the hypervisor's share: about 1 us per page on
// bare metal, 2-10 us in the paravirtualized guests of docs/host.md.
std::uint64_t BasePageFaultNanos(std::size_t pages) noexcept;

// Reserves `size` bytes of address space with no access and no memory behind it
// (PROT_NONE, MAP_NORESERVE), starting at a multiple of `alignment` (a power of two >=
// PageSize()). Pages become usable only through CommitPages. Returns nullptr on failure.
// Release the whole range with UnmapPages.
void* ReserveAddressSpace(std::size_t size, std::size_t alignment) noexcept;

// Makes a page-aligned part of a ReserveAddressSpace range readable and writable. The pages
// read as zeros. Returns false when the OS refuses (ENOMEM, the commit limit).
bool CommitPages(void* ptr, std::size_t size) noexcept;

// Gives the pages of a committed, page-aligned range back to the OS and makes the range
// inaccessible again (a fresh PROT_NONE mapping over it, so the commit charge goes too).
// The addresses stay reserved for a later CommitPages.
void UncommitPages(void* ptr, std::size_t size) noexcept;

// Resident set size of this process, in bytes, from /proc/self/statm. 0 if unreadable.
std::size_t ResidentBytes() noexcept;

// Peak resident set size (VmHWM) of this process, in bytes. 0 if unreadable.
std::size_t PeakResidentBytes() noexcept;

// Bytes of [ptr, ptr + size) that are resident now (mincore), counted in whole pages: the
// range is widened to page boundaries. Unmapped pages count as not resident. Unlike the
// process RSS this excludes every other mapping, so a sanitizer's shadow memory or another
// allocator's pages do not blur what one range holds.
std::size_t ResidentBytesIn(const void* ptr, std::size_t size) noexcept;

// This process's command line from /proc/self/cmdline, arguments joined by spaces, cut to
// fit `buf` (always NUL-terminated). Returns the length written; 0 if unreadable.
std::size_t ProcessCommandLine(char* buf, std::size_t size) noexcept;

// This process's id.
long ProcessId() noexcept;

// getenv without allocating; nullptr when unset.
const char* GetEnv(const char* name) noexcept;

// Writes `size` bytes to stderr with write(2): safe inside malloc and at exit.
void WriteStderr(const char* text, std::size_t size) noexcept;

// A close-on-exec duplicate of stderr, for output that must survive the program closing
// fd 2 before exit (GNU coreutils do). -1 when stderr is not open.
int DuplicateStderr() noexcept;

// Calls `start(arg)`, which starts a helper thread, with every signal blocked in the calling
// thread, then restores the caller's mask (also when `start` throws): the new thread inherits
// a mask that blocks every signal. The kernel hands a process-directed signal (kill(getpid(),
// ...), SIGINT, SIGTERM, SIGCHLD) to any thread that does not block it, so a helper thread
// with the program's mask took signals the program's own threads block and wait for
// (CPython's test_pthread_sigmask failed under monitor_interval).
void StartWithSignalsBlocked(void (*start)(void* arg), void* arg);
template <typename Start>
void StartWithSignalsBlocked(Start& start) {
  StartWithSignalsBlocked([](void* s) { (*static_cast<Start*>(s))(); }, &start);
}

// Registers fork handlers (pthread_atfork). Any may be nullptr.
void OnFork(void (*prepare)(), void (*parent)(), void (*child)()) noexcept;

// Registers `fn(arg)` to run when the calling thread exits (a pthread key destructor).
// One pthread key per distinct `fn` (at most 8 keys); returns false on failure. Takes no
// lock, so a fork in another thread meanwhile leaves the child nothing held.
bool OnThreadExit(void (*fn)(void*), void* arg) noexcept;

// A small integer unique to the calling thread while it lives.
std::uint64_t ThreadId() noexcept;

// Gives the calling thread's CPU to another runnable thread (sched_yield): for a lock
// waiter whose holder may be descheduled.
void YieldCpu() noexcept;

// Monotonic clock in nanoseconds.
std::uint64_t NowNanos() noexcept;

// CPU time of the calling thread in nanoseconds (CLOCK_THREAD_CPUTIME_ID): time it ran,
// in user space or in the kernel on its behalf, but not time it waited for a CPU.
std::uint64_t ThreadCpuNanos() noexcept;

// The address of `name` in the process's global symbol scope (dlsym(RTLD_DEFAULT)): an
// LD_PRELOAD library comes first. nullptr when no loaded object defines it.
void* FindSymbol(const char* name) noexcept;

// The address of `name` in the shared library `soname` if the process has already loaded it,
// also when a dlopen'ed library pulled it in with RTLD_LOCAL (FindSymbol misses those).
// Never loads anything; nullptr when the library is not loaded or lacks the name.
void* FindSymbolInLoadedLibrary(const char* soname, const char* name) noexcept;

// The C library's own heap (glibc's mallinfo2): bytes in allocated blocks and bytes it
// holds from the OS (arenas plus mmapped blocks). Counts only glibc's malloc, whatever
// malloc the process actually uses.
struct LibcHeapBytes {
  std::size_t in_use = 0;
  std::size_t held = 0;
};
LibcHeapBytes ReadLibcHeap() noexcept;

}  // namespace memarena::platform

namespace memarena::platform {

// Minimal file output for trace logs and reports written from inside the allocator:
// no heap allocation, no stdio. OpenForWrite truncates or creates (mode 0644) and returns
// a descriptor, or -1. WriteAll retries short writes and returns false on error.
int OpenForWrite(const char* path) noexcept;
bool WriteAll(int fd, const char* data, std::size_t size) noexcept;
void CloseFile(int fd) noexcept;

}  // namespace memarena::platform
