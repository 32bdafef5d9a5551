// GrowthDetector: judges from (time, in use) samples whether memory grows steadily, the
// monitor's rule, kept apart from threads and clocks so tests can feed it directly.
#pragma once

#include <cstddef>
#include <deque>

namespace memarena::common {

class GrowthDetector {
 public:
  // Growth: each of the last `window` samples is at least the one before it (less a
  // `jitter` fraction, so steady noise does not reset the run), at least half the steps
  // rise, and the window rose by
  // `min_rise` of its first value and by at least `min_bytes`.
  static constexpr std::size_t kWindow = 8;
  static constexpr double kJitter = 0.005;
  static constexpr double kMinRise = 0.10;
  static constexpr std::size_t kMinBytes = std::size_t{1} << 20;

  void Add(double seconds, std::size_t in_use);

  bool Growing() const;
  // Slope over the window in bytes per hour (0 with fewer than two samples).
  double BytesPerHour() const;
  // In use at the window's last sample less at its first, and the time between them
  // (0 with fewer than two samples): what the rate above extrapolates from.
  double WindowRise() const;
  double WindowSeconds() const;
  std::size_t Samples() const { return samples_.size(); }

 private:
  struct Point {
    double seconds;
    double in_use;
  };
  std::deque<Point> samples_;  // the last kWindow samples
};

}  // namespace memarena::common
