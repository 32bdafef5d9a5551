// Observability for long-running services: watermark callbacks before the host ceiling,
// the growth monitor, and sampled heap profiles (gperftools' heap-profile text format).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace memarena {

// One of the largest holders of memory at a crossing: a size class ("class 4096 B"),
// large blocks, or an arena.
struct MemoryConsumer {
  std::string name;
  std::size_t bytes = 0;
};

// What a watermark callback receives. `level` is the fraction of the limit just crossed
// upward (e.g. 0.88); held bytes are measured against the limit (the ceiling limits held).
struct WatermarkCrossing {
  double level = 0.0;
  std::size_t bytes_in_use = 0;
  std::size_t bytes_held = 0;
  std::size_t limit_bytes = 0;
  std::vector<MemoryConsumer> largest_consumers;  // largest first, at most 5
};

using WatermarkCallback = std::function<void(const WatermarkCrossing&)>;

// Default gap below a level that held bytes must fall under before the level fires again.
inline constexpr double kDefaultWatermarkHysteresis = 0.05;

// Watches the host allocator's held bytes against its ceiling (memarena::SetCeiling).
// `callback` runs once per upward crossing of each level (fractions in (0, 1], ascending
// order on the way up even when one allocation crosses several), and a level re-arms only
// after held fell below level - hysteresis. It runs on the allocating thread from the
// allocator's slow path, with no allocator lock held, so it may allocate (its own
// allocations never re-enter it); callbacks are serialized. No ceiling, no crossings.
// Costs nothing on the malloc fast path. Replaces earlier watermarks; empty `levels` turns
// them off. Throws std::invalid_argument naming a level outside (0, 1] or a hysteresis
// outside [0, 1).
void SetWatermarks(std::vector<double> levels, WatermarkCallback callback,
                   double hysteresis = kDefaultWatermarkHysteresis);

// "75/88/95" -> {0.75, 0.88, 0.95}. Throws ConfigError naming `key` and what is allowed.
std::vector<double> ParseWatermarkLevels(std::string_view key, std::string_view text);

// One line for stderr or a log: "memarena: watermark 88% crossed: held 7.1 GiB of 8 GiB
// ceiling, in use 6.9 GiB; largest: class 4 KiB 3.2 GiB, large blocks 2.1 GiB".
std::string FormatWatermarkCrossing(const WatermarkCrossing& crossing);

// ---- growth monitor ----------------------------------------------------------------------

// The monitor's judgement over its last intervals.
struct GrowthVerdict {
  bool growing = false;
  double bytes_per_hour = 0.0;   // slope of in use over the window
  // What the slope extrapolates from: in use at the window's last sample less at its first,
  // and the seconds between them (a window of 8 samples 20 ms apart spans 0.14 s).
  double window_rise_bytes = 0.0;
  double window_seconds = 0.0;
  std::size_t intervals = 0;     // samples the verdict rests on (at most the window, 8)
  std::uint64_t sample_number = 0;  // samples taken since the process started
  std::size_t bytes_in_use = 0;  // at the last sample
  std::size_t bytes_held = 0;
  // With profiling on: the stack that grew most, "+BYTES f1 < f2 < ..." innermost first,
  // each frame a function name (hex where the loaded file has no symbol for it).
  std::string top_growing_site;
};

// Starts a background thread that samples the host allocator every `interval`: records in
// use and held, judges growth (in use rising at every step of the last 8 samples, by 10 %
// and at least 1 MiB in all), prints a line to stderr when growth is first flagged, and
// rewrites MEMARENA_CONF's heap_profile and prometheus_file if set. Replaces a running
// monitor. Throws std::invalid_argument for an interval below 1 ms.
void StartMonitor(std::chrono::milliseconds interval);
void StopMonitor();

// Takes one monitor sample now, as the thread does each interval (for programs that pace
// themselves, e.g. one sample per request), and returns the verdict. `now_seconds` is the
// sample's time; a negative value means the monotonic clock.
GrowthVerdict MonitorSample(double now_seconds = -1.0);

// The verdict of the last sample (default when none was taken).
GrowthVerdict LastGrowthVerdict();

// "memarena: growth: in use rose 7.00 MiB in 70 s over 8 intervals, 360.0 MiB/hour (in use
// 61.00 MiB, held 64.00 MiB); top growing site +1.16 MiB f < g", or "...: none over ...".
std::string FormatGrowthVerdict(const GrowthVerdict& verdict);

// ---- sampled heap profiles --------------------------------------------------------------

// Mean bytes between sampled allocations (geometric intervals); 0 turns sampling off.
inline constexpr std::size_t kDefaultHeapSampleInterval = std::size_t{512} << 10;
void SetHeapSampleInterval(std::size_t bytes);
std::size_t HeapSampleInterval() noexcept;

// The sampled live blocks as estimates of the true live memory.
struct HeapProfileTotals {
  std::size_t samples = 0;
  double estimated_objects = 0.0;
  double estimated_bytes = 0.0;
};
HeapProfileTotals SampledHeapTotals();

// Writes the live sampled blocks by call stack, scaled to estimates of the true bytes, in
// the heap-profile text format `google-pprof --text PROGRAM PATH` reads (header, one line
// per stack, then MAPPED_LIBRARIES from /proc/self/maps). "%p" in `path` becomes the pid.
// Throws std::runtime_error naming the path when it cannot be written, or when sampling
// was never turned on (an empty profile would look like no memory).
void WriteHeapProfile(const std::string& path);

// The function name (demangled) at `file_offset` bytes into the ELF file `module`: a heap
// profile frame relocated by its MAPPED_LIBRARIES lines, as `memarena profile-diff` shows
// it. "" when the file cannot be read or has no function symbol there. Reads the file's
// symbol table on first use and keeps it.
std::string SymbolizeModuleOffset(const std::string& module, std::uint64_t file_offset);

// Writes the host allocator's stats, watermark level and growth verdict as Prometheus text
// to `path` atomically (a temporary file renamed over it), as node_exporter's textfile
// collector expects. Throws std::runtime_error naming the path on failure.
void WritePrometheusFile(const std::string& path);

}  // namespace memarena
