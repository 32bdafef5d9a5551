// Cache false sharing: 2 threads each allocate small objects (8-64 B) and write them many
// times. An allocator that hands two threads objects on the same cache line makes every
// write bounce the line between cores; one that serves each thread from its own spans does
// not. Blocks are freed and reallocated between rounds, on the thread that uses them.
//
// FALSE_SHARING_LINES=1 in the environment also records the cache line of every object's
// written byte per round and prints to stderr how many lines, how many 128-byte line pairs
// and how many 4 KiB pages a thread wrote that the other thread was writing in its own round
// at the time (the cause itself, measured without hardware counters; the checksum is
// unchanged).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <thread>
#include <vector>

#include "workload.h"

namespace {

constexpr int kThreads = 2;
constexpr std::size_t kObjects = 64;
constexpr int kWrites = 200;
constexpr std::size_t kNotRunning = ~std::size_t{0};

// One thread's record: the sorted cache lines of its objects' written bytes, round after
// round, and for each round the round the other thread was in (kNotRunning: none).
struct LineLog {
  std::vector<std::uintptr_t> lines;
  std::vector<std::size_t> other_round;
  alignas(64) std::atomic<std::size_t> round{kNotRunning};  // published for the other thread
};

void Record(LineLog& log, const LineLog& other, std::size_t r,
            const std::vector<volatile unsigned char*>& objects) {
  const auto first = log.lines.begin() + static_cast<std::ptrdiff_t>(r * kObjects);
  for (std::size_t i = 0; i < kObjects; ++i) {
    first[static_cast<std::ptrdiff_t>(i)] = reinterpret_cast<std::uintptr_t>(objects[i]) >> 6;
  }
  std::sort(first, first + kObjects);
  log.round.store(r, std::memory_order_release);
  log.other_round[r] = other.round.load(std::memory_order_acquire);
}

// Units of 64 << shift bytes (shift 1: the pair of lines the L2's adjacent-line prefetcher
// fetches together) written by both threads in overlapping rounds.
void PrintShared(const std::vector<LineLog>& logs, std::size_t rounds, int shift) {
  std::size_t overlapping = 0;  // rounds (of either thread) while the other was running
  std::size_t shared_total = 0;
  std::size_t worst = 0;
  std::size_t rounds_sharing = 0;
  std::vector<std::uintptr_t> a(kObjects);
  std::vector<std::uintptr_t> b(kObjects);
  std::vector<std::uintptr_t> both;
  const auto units = [shift](const LineLog& log, std::size_t round, std::vector<std::uintptr_t>& out) {
    const auto first = log.lines.begin() + static_cast<std::ptrdiff_t>(round * kObjects);
    std::transform(first, first + kObjects, out.begin(),
                   [shift](std::uintptr_t line) { return line >> shift; });
  };
  for (int t = 0; t < kThreads; ++t) {
    const LineLog& mine = logs[static_cast<std::size_t>(t)];
    const LineLog& other = logs[static_cast<std::size_t>(1 - t)];
    for (std::size_t r = 0; r < rounds; ++r) {
      const std::size_t o = mine.other_round[r];
      if (o == kNotRunning || o >= rounds) continue;
      ++overlapping;
      units(mine, r, a);
      units(other, o, b);
      both.clear();
      std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
      const auto shared =
          static_cast<std::size_t>(std::unique(both.begin(), both.end()) - both.begin());
      shared_total += shared;
      worst = std::max(worst, shared);
      rounds_sharing += shared != 0 ? 1 : 0;
    }
  }
  std::fprintf(stderr,
               "false_sharing %zu-byte units: %.3f per round shared with the other thread's "
               "current round (max %zu; %zu of %zu overlapping rounds share any)\n",
               std::size_t{64} << shift,
               overlapping == 0 ? 0.0
                                : static_cast<double>(shared_total) / static_cast<double>(overlapping),
               worst, rounds_sharing, overlapping);
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t rounds = workload::Scaled(100000, scale);
  const char* lines_env = std::getenv("FALSE_SHARING_LINES");
  const bool log_lines = lines_env != nullptr && lines_env[0] == '1';
  std::vector<LineLog> logs(kThreads);
  if (log_lines) {
    for (LineLog& log : logs) {
      log.lines.resize(rounds * kObjects);
      log.other_round.resize(rounds, kNotRunning);
    }
  }
  std::vector<std::uint64_t> checksums(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    LineLog* log = log_lines ? &logs[static_cast<std::size_t>(t)] : nullptr;
    const LineLog* other = &logs[static_cast<std::size_t>(1 - t)];
    threads.emplace_back([&checksums, t, rounds, log, other] {
      workload::Rng rng(static_cast<std::uint64_t>(t) + 7);
      std::vector<volatile unsigned char*> objects(kObjects);
      for (std::size_t r = 0; r < rounds; ++r) {
        for (auto& object : objects) {
          object = static_cast<volatile unsigned char*>(std::malloc(rng.Uniform(8, 64)));
          object[0] = 0;  // malloc's bytes are unspecified: count from zero under every allocator
        }
        if (log != nullptr) Record(*log, *other, r, objects);
        for (int w = 0; w < kWrites; ++w) {
          for (auto* object : objects) object[0] = static_cast<unsigned char>(object[0] + 1);
        }
        for (auto* object : objects) {
          checksums[t] += object[0];
          std::free(const_cast<unsigned char*>(object));
        }
      }
      if (log != nullptr) log->round.store(kNotRunning, std::memory_order_release);
    });
  }
  for (std::thread& t : threads) t.join();
  if (log_lines) {
    PrintShared(logs, rounds, 0);  // cache lines
    PrintShared(logs, rounds, 1);  // line pairs
    PrintShared(logs, rounds, 6);  // 4 KiB pages, within which the L2 streamer prefetches
  }
  std::printf("false_sharing: %zu rounds, checksum %llu\n", rounds,
              static_cast<unsigned long long>(checksums[0] + checksums[1]));
  return 0;
}
