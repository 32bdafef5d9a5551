// Helpers shared by the whole-process workloads: a fast deterministic RNG, size
// distributions, touching memory so it becomes resident, and the scale argument. The
// workloads call only malloc/free/realloc/new/delete, so any allocator can be preloaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace workload {

// xorshift64*: deterministic across allocators, so every run does the same work.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  std::uint64_t Next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
  }
  // Uniform in [lo, hi].
  std::size_t Uniform(std::size_t lo, std::size_t hi) { return lo + Next() % (hi - lo + 1); }
  // Log-uniform in [lo, hi]: as many blocks of 16-32 B as of 16-32 KiB, like real heaps.
  std::size_t LogUniform(std::size_t lo, std::size_t hi) {
    const int lo_bits = 63 - __builtin_clzll(lo);
    const int hi_bits = 63 - __builtin_clzll(hi);
    const int bits = lo_bits + static_cast<int>(Next() % static_cast<unsigned>(hi_bits - lo_bits + 1));
    const std::size_t base = std::size_t{1} << bits;
    const std::size_t size = base + Next() % base;
    return size < lo ? lo : (size > hi ? hi : size);
  }

 private:
  std::uint64_t state_;
};

// Writes the first bytes, one byte per page and the last byte, so the block is resident
// (counts in RSS) as a program's data would be, without the memset dominating the time.
// Returns a checksum contribution (of written bytes only, so it is the same under every
// allocator) so the compiler keeps the writes.
inline std::uint64_t Touch(void* ptr, std::size_t size, unsigned char value) {
  auto* bytes = static_cast<unsigned char*>(ptr);
  std::memset(bytes, value, size < 64 ? size : 64);
  for (std::size_t i = 4096; i < size; i += 4096) bytes[i] = value;
  bytes[size - 1] = value;
  return bytes[0] + bytes[size - 1];
}

// argv[1], when given, scales the amount of work (1.0 = the default used by compare.sh).
inline double Scale(int argc, char** argv) {
  if (argc < 2) return 1.0;
  const double scale = std::atof(argv[1]);
  if (scale <= 0) {
    std::fprintf(stderr, "usage: %s [scale > 0]\n", argv[0]);
    std::exit(2);
  }
  return scale;
}

// Runs body(t) for t = 0 .. threads - 1, each on its own thread, and returns the sum of the
// checksums they return.
template <typename Body>
std::uint64_t SumOverThreads(int threads, Body body) {
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(threads));
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&sums, &body, t] { sums[static_cast<std::size_t>(t)] = body(t); });
  }
  for (std::thread& thread : running) thread.join();
  std::uint64_t sum = 0;
  for (std::uint64_t s : sums) sum += s;
  return sum;
}

inline std::size_t Scaled(std::size_t n, double scale) {
  const auto scaled = static_cast<std::size_t>(static_cast<double>(n) * scale);
  return scaled == 0 ? 1 : scaled;
}

}  // namespace workload
