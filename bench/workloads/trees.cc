// Many threads allocating and freeing trees: each of 4 threads builds binary trees of
// 32-96 B nodes with new, walks them and deletes them bottom up, keeping one long-lived
// tree per thread (the shape of GC-benchmark-style programs: deep recursion of small,
// short-lived objects beside a stable live set).
#include <cstdio>
#include <new>

#include "workload.h"

namespace {

struct Node {
  Node* left;
  Node* right;
  std::uint64_t payload[2];
};

// A node carries 0-8 extra words so the tree spans a few size classes.
Node* Build(int depth, workload::Rng& rng) {
  const std::size_t extra = rng.Next() % 9;
  auto* node = new (new unsigned char[sizeof(Node) + extra * 8]) Node{};
  node->payload[0] = static_cast<std::uint64_t>(depth);
  node->payload[1] = extra;
  node->left = depth > 0 ? Build(depth - 1, rng) : nullptr;
  node->right = depth > 0 ? Build(depth - 1, rng) : nullptr;
  return node;
}

std::uint64_t Walk(const Node* node) {
  return node == nullptr ? 0 : node->payload[0] + Walk(node->left) + Walk(node->right);
}

void Destroy(Node* node) {
  if (node == nullptr) return;
  Destroy(node->left);
  Destroy(node->right);
  delete[] reinterpret_cast<unsigned char*>(node);  // Node is trivially destructible
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t rounds = workload::Scaled(8000, scale);
  constexpr int kThreads = 4;
  const std::uint64_t checksum = workload::SumOverThreads(kThreads, [rounds](int t) {
    workload::Rng rng(static_cast<std::uint64_t>(t) + 1);
    std::uint64_t sum = 0;
    Node* long_lived = Build(14, rng);
    for (std::size_t r = 0; r < rounds; ++r) {
      Node* tree = Build(4 + static_cast<int>(r % 8), rng);
      sum += Walk(tree);
      Destroy(tree);
    }
    sum += Walk(long_lived);
    Destroy(long_lived);
    return sum;
  });
  std::printf("trees: %zu rounds x %d threads, checksum %llu\n", rounds, kThreads,
              static_cast<unsigned long long>(checksum));
  return 0;
}
