// RecentPeak: the highest value a quantity reached in the current window of `kWindowOps`
// operations and in the window before, so the page heap remembers a program's recent need
// for one to two windows and forgets a need that has passed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memarena::host {

template <std::uint32_t kWindowOps>
class RecentPeak {
 public:
  // Counts one operation at which the quantity is `now`.
  void Tick(std::size_t now) noexcept {
    if (now > window_peak_) window_peak_ = now;
    if (++window_ops_ < kWindowOps) return;
    window_ops_ = 0;
    prev_window_peak_ = window_peak_;
    window_peak_ = now;
  }

  // The highest value of this window and the previous one.
  std::size_t Value() const noexcept {
    return window_peak_ > prev_window_peak_ ? window_peak_ : prev_window_peak_;
  }

 private:
  std::uint32_t window_ops_ = 0;
  std::size_t window_peak_ = 0;
  std::size_t prev_window_peak_ = 0;
};

}  // namespace memarena::host
