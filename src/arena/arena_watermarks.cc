// What an arena's watermark crossing reports: held and in use as the operation that crossed
// left them, against max_mem, with the arena's chunks in use and its free held bytes.
#include "arena/arena_watermarks.h"

#include <fmt/format.h>

namespace memarena::arena {

WatermarkCrossing WatermarkWatch::Describe() const {
  WatermarkCrossing crossing;
  crossing.bytes_in_use = in_use_after_;
  crossing.bytes_held = held_after_;
  crossing.limit_bytes = limit_;
  crossing.largest_consumers.push_back({fmt::format("{} chunks in use", name_), in_use_after_});
  if (held_after_ > in_use_after_) {
    crossing.largest_consumers.push_back(
        {fmt::format("{} free chunks", name_), held_after_ - in_use_after_});
  }
  return crossing;
}

}  // namespace memarena::arena
