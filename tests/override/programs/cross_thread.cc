// A multithreaded program with cross-thread frees: workers allocate strings, vectors and
// raw blocks and hand them to the next worker, which checks and frees them. Prints a
// checksum that does not depend on the allocator or on thread timing.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Message {
  std::string text;
  std::vector<int> numbers;
  char* raw = nullptr;
  std::size_t raw_size = 0;
};

struct Channel {
  std::mutex mutex;
  std::deque<std::unique_ptr<Message>> queue;
};

constexpr int kWorkers = 4;
constexpr int kMessages = 10000;

std::unique_ptr<Message> MakeMessage(int worker, int i) {
  auto m = std::make_unique<Message>();
  m->text = "worker " + std::to_string(worker) + " message " + std::to_string(i);
  m->numbers.assign(static_cast<std::size_t>(i % 97), i);
  m->raw_size = static_cast<std::size_t>(16 + (i * 37) % 5000);
  m->raw = static_cast<char*>(std::malloc(m->raw_size));
  std::memset(m->raw, i % 251, m->raw_size);
  return m;
}

unsigned long long Consume(const Message& m) {
  unsigned long long sum = m.text.size();
  for (int n : m.numbers) sum += static_cast<unsigned long long>(n);
  sum += static_cast<unsigned char>(m.raw[m.raw_size - 1]);
  return sum;
}

}  // namespace

int main() {
  std::vector<Channel> channels(kWorkers);
  std::vector<unsigned long long> sums(kWorkers, 0);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      Channel& out = channels[static_cast<std::size_t>((w + 1) % kWorkers)];
      Channel& in = channels[static_cast<std::size_t>(w)];
      for (int i = 0; i < kMessages; ++i) {
        auto m = MakeMessage(w, i);
        {
          std::lock_guard<std::mutex> lock(out.mutex);
          out.queue.push_back(std::move(m));
        }
        // Drain what arrived so far: these blocks were allocated by another thread.
        std::deque<std::unique_ptr<Message>> got;
        {
          std::lock_guard<std::mutex> lock(in.mutex);
          got.swap(in.queue);
        }
        for (auto& msg : got) {
          sums[static_cast<std::size_t>(w)] += Consume(*msg);
          std::free(msg->raw);
        }
      }
    });
  }
  for (std::thread& t : workers) t.join();
  unsigned long long total = 0;
  for (int w = 0; w < kWorkers; ++w) {
    for (auto& msg : channels[static_cast<std::size_t>(w)].queue) {
      total += Consume(*msg);
      std::free(msg->raw);
    }
    total += sums[static_cast<std::size_t>(w)];
  }
  std::printf("cross-thread: %d messages, checksum %llu\n", kWorkers * kMessages, total);
  return 0;
}
