// Output files that a reader may open at any moment (a heap profile, a textfile collector's
// metrics): filled under a temporary name and renamed over the target, so a reader sees the
// old file or the whole new one, and a writer stopped midway (the monitor thread when the
// process exits) leaves the target as it was.
#pragma once

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "platform/os.h"
#include "platform/stack.h"

namespace memarena::common {

// `write(fd)` fills "<target>.tmp.<pid>" and returns whether it succeeded (errno saying why
// not); the file then replaces `target`. Throws std::runtime_error naming `what`, the file
// and the OS's reason on a failure, after removing the temporary.
template <typename Write>
void ReplaceFileContents(const std::string& target, std::string_view what, Write write) {
  const std::string temporary = fmt::format("{}.tmp.{}", target, platform::ProcessId());
  errno = 0;
  const int fd = platform::OpenForWrite(temporary.c_str());
  if (fd < 0) {
    throw std::runtime_error(fmt::format("{}: cannot create '{}': {}", what, temporary,
                                         std::strerror(errno)));
  }
  const bool written = write(fd);
  int error = written ? 0 : (errno != 0 ? errno : EIO);
  platform::CloseFile(fd);
  if (error == 0 && !platform::ReplaceFile(temporary.c_str(), target.c_str())) error = errno;
  if (error != 0) {
    platform::RemoveFile(temporary.c_str());
    throw std::runtime_error(fmt::format("{}: cannot write '{}' and rename it to '{}': {}", what,
                                         temporary, target, std::strerror(error)));
  }
}

}  // namespace memarena::common
