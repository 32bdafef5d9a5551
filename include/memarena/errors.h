// Exceptions of the public API: OutOfMemory for a failed allocation, ConfigError for bad settings.
#pragma once

#include <new>
#include <stdexcept>
#include <string>

namespace memarena {

// Thrown by Allocator::Allocate when a request cannot be served. what() is the full
// diagnostic: requested, in use, held, limit, releasable, and which knob to turn.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// Thrown when a configuration string (MEMARENA_CONF, ArenaConfig::Parse, ...) has an
// unknown key or a bad value. what() names the key and what is allowed.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace memarena
