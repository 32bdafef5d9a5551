// HostConfig: the host heap's settings, read from MEMARENA_CONF (whose drop-in keys, such as
// stats_at_exit and trace_file, are the drop-in's own settings: docs/dropin.md).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace memarena {

// What the host heap does when free (or delete, or realloc) is given a pointer it did not
// hand out or that is already free: kAbort prints one line naming the pointer, the
// operation and the size class, then aborts (the default, as glibc); kReport prints the
// line and carries on without freeing anything; kIgnore carries on silently.
enum class InvalidFreeAction { kAbort, kReport, kIgnore };

struct HostConfig {
  // Limit on held bytes; 0 = unlimited. Key `ceiling`, a size (e.g. 8GiB).
  std::size_t ceiling = 0;
  // When held crosses ratio * ceiling, free spans go back to the OS before more is
  // taken. Key `release_threshold_ratio`, in (0, 1].
  double release_threshold_ratio = 0.8;
  // Bytes all thread caches together keep at most: the pool each thread's budget grows
  // from as it needs and gives back to as its lists idle. Key `thread_cache_bytes`, a size.
  std::size_t thread_cache_bytes = 32u << 20;
  // Free committed bytes ReleaseUnusedSpans() keeps for reuse (a warm working set that still
  // counts against the ceiling). Key `release_keep`, a size; 0 = release everything.
  std::size_t release_keep = 0;
  // Fresh pages come as transparent huge pages (one page fault per 2 MiB instead of 512):
  // large blocks on pages the OS did not hold ask for them on the whole 2 MiB pages inside
  // them, and past 64 MiB held smaller requests commit whole 2 MiB pages. Memory touched
  // only here and there then costs whole huge pages of RSS, all within held. Only while
  // they prove cheap: the heap times each huge page's first fault, and two slower than 2 ms
  // and than the same 2 MiB in 4 KiB faults (a VM whose host must back them again), with
  // fewer than 8 fast ones between, switch them off for the process. Key `huge_pages`, 0|1.
  bool huge_pages = true;
  // Double, interior and foreign frees. Key `on_invalid_free`, abort|report|ignore.
  InvalidFreeAction on_invalid_free = InvalidFreeAction::kAbort;

  // Parses "key:value,key:value" (MEMARENA_CONF's syntax). Sizes accept B, K/KiB, M/MiB,
  // G/GiB, T/TiB. The drop-in's keys are checked too and otherwise left to the drop-in.
  // Throws ConfigError with one line per unknown key or bad value, each naming the key and
  // what is allowed.
  static HostConfig Parse(std::string_view text);

  // Parses the MEMARENA_CONF environment variable (defaults when unset or empty).
  // Throws ConfigError like Parse.
  static HostConfig FromEnvironment();
};

// Every MEMARENA_CONF key (host and drop-in) with its value, default and meaning, one line
// each; generated from the same rows as the parser. For --help and messages.
std::string HostConfigHelp();

}  // namespace memarena
