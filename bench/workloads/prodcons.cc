// Producer/consumer with cross-thread frees: producers allocate messages (16 B - 4 KiB) and
// pass them in batches through a bounded queue; consumers read and free them. Every free
// is remote, the case that thread caches handle worst.
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "workload.h"

namespace {

constexpr std::size_t kBatch = 256;
constexpr std::size_t kMaxQueued = 64;  // batches

struct Queue {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::vector<void*>> batches;
  int producers_left = 0;
};

void Produce(Queue& q, std::uint64_t seed, std::size_t messages) {
  workload::Rng rng(seed);
  std::vector<void*> batch;
  for (std::size_t i = 0; i < messages; ++i) {
    const std::size_t size = rng.LogUniform(16, 4096);
    void* p = std::malloc(size);
    workload::Touch(p, size, static_cast<unsigned char>(size));
    batch.push_back(p);
    if (batch.size() == kBatch || i + 1 == messages) {
      std::unique_lock<std::mutex> lock(q.mutex);
      q.changed.wait(lock, [&q] { return q.batches.size() < kMaxQueued; });
      q.batches.push_back(std::move(batch));
      batch = {};
      q.changed.notify_all();
    }
  }
  std::lock_guard<std::mutex> lock(q.mutex);
  --q.producers_left;
  q.changed.notify_all();
}

std::uint64_t Consume(Queue& q) {
  std::uint64_t checksum = 0;
  for (;;) {
    std::vector<void*> batch;
    {
      std::unique_lock<std::mutex> lock(q.mutex);
      q.changed.wait(lock, [&q] { return !q.batches.empty() || q.producers_left == 0; });
      if (q.batches.empty()) return checksum;
      batch = std::move(q.batches.front());
      q.batches.pop_front();
      q.changed.notify_all();
    }
    for (void* p : batch) {
      checksum += *static_cast<unsigned char*>(p);
      std::free(p);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  constexpr int kPairs = 2;
  const std::size_t per_producer = workload::Scaled(2000000, scale);
  Queue q;
  q.producers_left = kPairs;
  std::vector<std::thread> producers;
  std::vector<std::uint64_t> sums(kPairs);
  std::vector<std::thread> consumers;
  for (int i = 0; i < kPairs; ++i) {
    producers.emplace_back(Produce, std::ref(q), i + 1, per_producer);
    consumers.emplace_back([&q, &sums, i] { sums[i] = Consume(q); });
  }
  for (std::thread& t : producers) t.join();
  for (std::thread& t : consumers) t.join();
  std::uint64_t checksum = 0;
  for (std::uint64_t s : sums) checksum += s;
  std::printf("prodcons: %zu messages, checksum %llu\n", per_producer * kPairs,
              static_cast<unsigned long long>(checksum));
  return 0;
}
