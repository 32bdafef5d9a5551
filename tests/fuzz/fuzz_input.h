// FuzzInput: reads integers and strings from a libFuzzer input, yielding zeros once it runs
// out, so every harness decodes its operations the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace memarena::fuzz {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  bool Empty() const { return pos_ >= size_; }

  std::uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }

  std::uint32_t U32() {
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value = (value << 8) | Byte();
    return value;
  }

  // A value in [0, bound) (bound > 0).
  std::uint32_t Below(std::uint32_t bound) { return U32() % bound; }

  // The rest of the input as text.
  std::string Rest() {
    std::string text(reinterpret_cast<const char*>(data_ + pos_), size_ - pos_);
    pos_ = size_;
    return text;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// Counts one operation (or n) of a harness and prints the running total every 2^20 of them
// and at exit, so a long run's log says how many operations it checked. Always true.
bool CountOperation();
bool CountOperations(std::uint64_t n);

// Aborts with `what` when `ok` is false: a broken invariant is a crash libFuzzer keeps.
void Check(bool ok, const char* what);

}  // namespace memarena::fuzz
