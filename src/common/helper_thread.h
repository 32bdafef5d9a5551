// A thread the library starts for itself (the growth monitor, the planner's background
// planning): every signal is blocked in it from its first instruction, so a signal meant
// for the program's threads is never handed to it (platform::StartWithSignalsBlocked).
#pragma once

#include <thread>
#include <utility>

#include "platform/os.h"

namespace memarena::common {

template <typename Body>
std::thread StartHelperThread(Body body) {
  std::thread thread;
  auto start = [&thread, &body] { thread = std::thread(std::move(body)); };
  platform::StartWithSignalsBlocked(start);
  return thread;
}

}  // namespace memarena::common
