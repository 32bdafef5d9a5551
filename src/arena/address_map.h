// AddressMap: chunk start address -> chunk handle for the chunks in use, as one flat
// open-addressing table (linear probing, backward-shift deletion), so the lookup on every
// free costs one cache miss instead of a bucket and a node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "arena/chunk_store.h"

namespace memarena::arena {

class AddressMap {
 public:
  AddressMap() : slots_(kInitialSlots) {}

  // Grows ahead so that the next Insert cannot allocate (and so cannot throw). False when
  // operator new refused; the map is then as it was.
  bool ReserveOneMore() noexcept {
    if ((size_ + 1) * 2 <= slots_.size()) return true;
    try {
      Grow();
      return true;
    } catch (...) {
      return false;
    }
  }

  // `addr` must be non-zero and not present.
  void Insert(std::uintptr_t addr, ChunkHandle handle) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    Place(addr, handle);
    ++size_;
  }

  // The handle at `addr`, or kInvalidChunk.
  ChunkHandle Find(std::uintptr_t addr) const noexcept {
    for (std::size_t i = Home(addr);; i = Next(i)) {
      if (slots_[i].addr == addr) return slots_[i].handle;
      if (slots_[i].addr == 0) return kInvalidChunk;
    }
  }

  // Removes `addr` (which must be present).
  void Erase(std::uintptr_t addr) noexcept {
    std::size_t hole = Home(addr);
    while (slots_[hole].addr != addr) hole = Next(hole);
    // Pull later members of the probe run back into the hole, so lookups need no tombstones.
    for (std::size_t i = Next(hole); slots_[i].addr != 0; i = Next(i)) {
      const std::size_t home = Home(slots_[i].addr);
      const bool movable = hole <= i ? (home <= hole || home > i) : (home <= hole && home > i);
      if (movable) {
        slots_[hole] = slots_[i];
        hole = i;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }

  std::size_t size() const noexcept { return size_; }

 private:
  struct Slot {
    std::uintptr_t addr = 0;
    ChunkHandle handle = kInvalidChunk;
  };
  static constexpr std::size_t kInitialSlots = 64;

  std::size_t Home(std::uintptr_t addr) const noexcept {
    // Chunk addresses are multiples of 256: drop those bits, then mix (Fibonacci hashing).
    return static_cast<std::size_t>(((addr >> 8) * 0x9E3779B97F4A7C15ull) >> 32) & (slots_.size() - 1);
  }
  std::size_t Next(std::size_t i) const noexcept { return (i + 1) & (slots_.size() - 1); }

  void Place(std::uintptr_t addr, ChunkHandle handle) noexcept {
    std::size_t i = Home(addr);
    while (slots_[i].addr != 0) i = Next(i);
    slots_[i] = Slot{addr, handle};
  }

  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.addr != 0) Place(s.addr, s.handle);
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace memarena::arena
