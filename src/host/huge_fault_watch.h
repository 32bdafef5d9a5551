// HugeFaultWatch: whether transparent huge pages are cheap on this machine, judged from the
// time their first write faults take. A huge page saves 511 of 512 page faults only when the
// kernel can hand one out about as fast as it zeroes 2 MiB. Some virtual machines cannot:
// with free page reporting (/sys/module/page_reporting/parameters/page_reporting_order) the
// host takes back the guest's free blocks of 2^order pages and more, and a huge page is cut
// from one of those, so the host must back it again. Measured on such a guest (the
// fourteenth session's 2-core VM, Linux 6.18), per 2 MiB: a huge page from reported memory
// 6.5 ms, a huge page from memory freed a moment ago 0.2-0.3 ms, the same 2 MiB in 4 KiB
// faults 0.8-1.0 ms. There `mixed_heap` took 1.12 s of CPU with huge pages against 0.41
// without.
//
// What counts as slow depends on the machine's base-page faults too. The seventeenth
// session's guest (the same machine kind, Linux 6.18, free page reporting on) took 0.1-0.2 ms
// for a huge page from memory freed a moment ago and 3.1-3.8 ms from reported memory, but
// 5.0-5.2 ms for the same 2 MiB in 4 KiB faults (10 us each) whatever the memory's past: there
// a huge page is always the cheaper way, and a fixed bound switched them off in every
// `large_buffers` run (1.42x tcmalloc's CPU, 165 k faults against 41 k). So the bound is
// kDefaultSlowNanos, raised to the base-page equivalent (what faulting one huge page's bytes
// in base pages costs here) once a fault above kDefaultSlowNanos makes the page heap measure
// it (platform::BasePageFaultNanos, once per process).
//
// The page heap times the first write fault of each huge page it advises (the caller's own
// page inside it, so the pages it makes resident are ones the program is about to write).
// Until kFastInARowToTrust fast faults in a row have shown them cheap, it advises only the
// first huge page of each block: on the VM above the whole blocks advised before the switch
// cost `large_buffers` about 0.05 s of system time (0.16-0.21 s against 0.22-0.52 s over
// five alternating runs at scale 0.1), and a machine where they are cheap loses at most the
// rest of its first few blocks' huge pages.
// A second slow fault switches huge pages off for the rest of the process unless
// kFastToForgiveSlow fast faults came between it and the one before: one fault that met a
// passing cost (a compaction, a reclaim) switches nothing, but slow faults mixed with fast
// ones do. On the thirty-first session's VM (the same machine kind) a huge page from memory
// freed a moment ago took 0.04-0.2 ms, one from reported memory 4.3-6.5 ms, and 2 MiB in
// 4 KiB faults 0.8 ms, so a slow fault loses what about seven fast ones save. In
// `mixed_heap` the two kinds came mixed (12 slow among 92 in one run; in another the first
// two slow ones were 3 fast faults apart), and the earlier rule, two slow faults in a row,
// let its CPU time range over 0.20-0.43 s against 0.26-0.30 with huge_pages:0; with this
// one, 0.20-0.30 (eight interleaved runs each).
// The time is the thread's CPU time, so a fault preempted on a busy machine is not slow.
// A fault quicker than kMinHugeFaultNanos made no huge page (the page was mapped already, or
// the kernel fell back to 4 KiB pages) and counts for nothing. The switch holds until Reset
// (the huge_pages key applied again): what is advised stays advised, and only new advice
// stops, so the heap falls back to the plain 4 KiB path it had before.
//
// Thread safety: Record is called outside the heap lock by whichever thread advised a huge
// page; every field is a relaxed atomic, and a race between two records can at worst count
// one slow fault too few (or measure the base-page cost twice).
#pragma once

#include <atomic>
#include <cstdint>

namespace memarena::host {

class HugeFaultWatch {
 public:
  // Above this, a huge page costs more than faulting its 2 MiB in 4 KiB pages (0.8-1.0 ms
  // on the VM above), with room for a machine twice as slow at zeroing.
  static constexpr std::uint64_t kDefaultSlowNanos = 2'000'000;
  // Two slow faults in a row switch huge pages off, and so do two with fewer than
  // kFastToForgiveSlow fast ones between them.
  static constexpr std::uint32_t kSlowInARow = 2;
  static constexpr std::uint32_t kFastToForgiveSlow = 8;
  static constexpr std::uint32_t kSwitchOffDebt = (kSlowInARow - 1) * kFastToForgiveSlow;
  // Fast faults in a row after which huge pages are trusted (Trusted).
  static constexpr std::uint32_t kFastInARowToTrust = 3;
  // Zeroing 2 MiB takes longer than this even at 80 GB/s; a 4 KiB fault takes 1-5 us.
  static constexpr std::uint64_t kMinHugeFaultNanos = 25'000;

  // Whether a fault of `nanos` would be slow by the fixed bound while the base-page
  // equivalent is not known yet: the caller then measures it (SetBasePageEquivalent) before
  // it records the fault.
  bool WantsBasePageEquivalent(std::uint64_t nanos) const noexcept {
    return nanos > slow_nanos_.load(std::memory_order_relaxed) &&
           !base_page_equivalent_known_.load(std::memory_order_relaxed);
  }

  // What faulting one huge page's bytes in base pages costs on this machine (0: the
  // measurement failed, and the fixed bound stands alone).
  void SetBasePageEquivalent(std::uint64_t nanos) noexcept {
    base_page_equivalent_.store(nanos, std::memory_order_relaxed);
    base_page_equivalent_known_.store(true, std::memory_order_relaxed);
  }

  // A fault above this is slow: the fixed bound, or the base-page equivalent where that is
  // dearer (a huge page that costs less than its bytes in base pages saves time however slow).
  std::uint64_t Bound() const noexcept {
    const std::uint64_t fixed = slow_nanos_.load(std::memory_order_relaxed);
    const std::uint64_t equivalent = base_page_equivalent_.load(std::memory_order_relaxed);
    return equivalent > fixed ? equivalent : fixed;
  }

  // Counts one first write fault of a huge page that took `nanos`.
  void Record(std::uint64_t nanos) noexcept {
    if (nanos < kMinHugeFaultNanos) return;
    const std::uint32_t debt = slow_debt_.load(std::memory_order_relaxed);
    if (nanos <= Bound()) {
      slow_debt_.store(debt > 0 ? debt - 1 : 0, std::memory_order_relaxed);
      fast_in_a_row_.store(fast_in_a_row_.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
      return;
    }
    fast_in_a_row_.store(0, std::memory_order_relaxed);
    slow_debt_.store(debt + kFastToForgiveSlow, std::memory_order_relaxed);
    if (debt + kFastToForgiveSlow > kSwitchOffDebt &&
        switched_off_at_.load(std::memory_order_relaxed) == 0) {
      switched_off_at_.store(nanos, std::memory_order_relaxed);
    }
  }

  // Whether kFastInARowToTrust fast faults came in a row (or no fault can be slow: tests):
  // until then the heap advises one huge page per block (the trial, see above).
  bool Trusted() const noexcept {
    return fast_in_a_row_.load(std::memory_order_relaxed) >= kFastInARowToTrust ||
           slow_nanos_.load(std::memory_order_relaxed) == UINT64_MAX;
  }
  // Whether huge pages have proved slow here: the heap then advises no more of them.
  bool Slow() const noexcept { return switched_off_at_.load(std::memory_order_relaxed) != 0; }

  // The fault that switched huge pages off, in nanoseconds; 0 while they are on.
  std::uint64_t SwitchedOffAt() const noexcept {
    return switched_off_at_.load(std::memory_order_relaxed);
  }

  // Forgets every fault seen: huge pages are on again until proved slow again.
  void Reset() noexcept {
    slow_debt_.store(0, std::memory_order_relaxed);
    fast_in_a_row_.store(0, std::memory_order_relaxed);
    switched_off_at_.store(0, std::memory_order_relaxed);
  }

  // Fixes the bound a fault must exceed to count as slow, with no base-page equivalent
  // (tests set 0: every huge page's is).
  void SetSlowNanos(std::uint64_t nanos) noexcept {
    slow_nanos_.store(nanos, std::memory_order_relaxed);
    SetBasePageEquivalent(0);
  }

 private:
  std::atomic<std::uint64_t> slow_nanos_{kDefaultSlowNanos};
  // Kept by Reset: it is the machine's, not the process's history.
  std::atomic<std::uint64_t> base_page_equivalent_{0};
  std::atomic<bool> base_page_equivalent_known_{false};
  // kFastToForgiveSlow per slow fault, less one per fast fault, never below 0; above
  // kSwitchOffDebt, huge pages are switched off.
  std::atomic<std::uint32_t> slow_debt_{0};
  std::atomic<std::uint32_t> fast_in_a_row_{0};
  std::atomic<std::uint64_t> switched_off_at_{0};  // once set, >= kMinHugeFaultNanos
};

}  // namespace memarena::host
