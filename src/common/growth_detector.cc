// The monitor's growth rule: a rising run over the whole window, big enough to matter.
#include "common/growth_detector.h"

namespace memarena::common {

void GrowthDetector::Add(double seconds, std::size_t in_use) {
  samples_.push_back({seconds, static_cast<double>(in_use)});
  if (samples_.size() > kWindow) samples_.pop_front();
}

bool GrowthDetector::Growing() const {
  if (samples_.size() < kWindow) return false;
  std::size_t rises = 0;
  for (std::size_t i = 1; i < samples_.size(); ++i) {
    if (samples_[i].in_use < samples_[i - 1].in_use * (1.0 - kJitter)) return false;
    if (samples_[i].in_use > samples_[i - 1].in_use) ++rises;
  }
  // A step up after a long flat run is a new level, not growth: most steps must rise.
  if (rises * 2 < samples_.size() - 1) return false;
  const double rise = samples_.back().in_use - samples_.front().in_use;
  return rise >= static_cast<double>(kMinBytes) && rise >= kMinRise * samples_.front().in_use;
}

double GrowthDetector::BytesPerHour() const {
  const double seconds = WindowSeconds();
  return seconds > 0.0 ? WindowRise() / seconds * 3600.0 : 0.0;
}

double GrowthDetector::WindowRise() const {
  return samples_.size() < 2 ? 0.0 : samples_.back().in_use - samples_.front().in_use;
}

double GrowthDetector::WindowSeconds() const {
  return samples_.size() < 2 ? 0.0 : samples_.back().seconds - samples_.front().seconds;
}

}  // namespace memarena::common
