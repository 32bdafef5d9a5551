// InlineOutOfMemory: a memarena::OutOfMemory whose diagnostic lives inside the exception
// object, for a failure where the heap itself just said no (no std::string can be built).
#pragma once

#include <cstddef>
#include <span>

#include "memarena/errors.h"

namespace memarena::common {

// Caught as memarena::OutOfMemory or std::bad_alloc like any other; the writer fills text()
// (common::WriteOutOfMemoryMessage, cut to fit and NUL-terminated).
class InlineOutOfMemory : public OutOfMemory {
 public:
  InlineOutOfMemory() noexcept : OutOfMemory({}) { text_[0] = '\0'; }
  const char* what() const noexcept override { return text_; }
  std::span<char> text() noexcept { return text_; }

 private:
  char text_[1024];  // the diagnostic is about 650 characters
};

}  // namespace memarena::common
