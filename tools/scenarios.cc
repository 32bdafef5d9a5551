// Generators of the demo's traces. Pointers are synthetic (unique per allocation), times are
// one microsecond per event: replay needs only the order.
#include "scenarios.h"

#include <random>

namespace memarena::tools {
namespace {

class TraceBuilder {
 public:
  std::uintptr_t Allocate(std::size_t size) {
    const std::uintptr_t ptr = 0x100000 + 64 * next_id_++;
    Add(TraceAction::kAllocate, ptr, size);
    return ptr;
  }
  void Free(std::uintptr_t ptr, std::size_t size) { Add(TraceAction::kFree, ptr, size); }
  void StartPhase(std::uint64_t key) { phases_.push_back({trace_.size(), key}); }

  Scenario Finish(std::string name, std::string description) {
    return Scenario{std::move(name), std::move(description), std::move(trace_), std::move(phases_)};
  }

 private:
  void Add(TraceAction action, std::uintptr_t ptr, std::size_t size) {
    trace_.push_back({action, ptr, size, 1, 0, 1, trace_.size() * 1000});
  }
  std::vector<TraceEvent> trace_;
  std::vector<Phase> phases_;
  std::uint64_t next_id_ = 0;
};

// The feed-forward half of a transformer layer: the 4x expansion and the layer's output, then
// the attention output and the layer's input are dropped. Returns the output.
std::uintptr_t FeedForward(TraceBuilder& b, std::uintptr_t attn, std::uintptr_t input,
                           std::size_t input_size, std::size_t act) {
  const std::uintptr_t expanded = b.Allocate(4 * act);
  const std::uintptr_t out = b.Allocate(act);
  b.Free(expanded, 4 * act);
  b.Free(attn, act);
  b.Free(input, input_size);
  return out;
}

constexpr std::size_t kHidden = 768, kHeads = 12, kFloat = 4;

// One request through a transformer whose activations are `row` bytes: the input, then per
// layer `attention(b)` (which returns its output, `row` bytes) and the feed-forward half, then
// the head's `head_size`-byte output. The two inference scenarios differ only in the shapes
// they draw, their attention and their head.
template <typename Attention>
void TransformerRequest(TraceBuilder& b, int layers, std::size_t row, std::size_t head_size,
                        Attention attention) {
  std::uintptr_t x = b.Allocate(row);
  for (int l = 0; l < layers; ++l) {
    const std::uintptr_t attn = attention(b);
    x = FeedForward(b, attn, x, row, row);
  }
  const std::uintptr_t head = b.Allocate(head_size);
  b.Free(x, row);
  b.Free(head, head_size);
}

// One trace: `step(builder, rng, i)` for i in [0, steps), from one seeded random stream.
template <typename Step>
Scenario Generate(int steps, std::uint64_t seed, std::string name, std::string description,
                  Step step) {
  TraceBuilder b;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < steps; ++i) step(b, rng, i);
  return b.Finish(std::move(name), std::move(description));
}

}  // namespace

Scenario TestSuiteScenario(int cases, std::uint64_t seed) {
  return Generate(
      cases, seed, "test suite",
      "one process runs test cases back to back; each allocates 2-6 MiB of mixed "
      "sizes and frees it, some leave small fixtures behind",
      [&](TraceBuilder& b, std::mt19937_64& rng, int c) {
        b.StartPhase(static_cast<std::uint64_t>(c));
        std::vector<std::pair<std::uintptr_t, std::size_t>> blocks;
        std::size_t total = 0;
        const std::size_t budget = (2u << 20) + rng() % (4u << 20);
        while (total < budget) {
          const unsigned r = static_cast<unsigned>(rng() % 100);
          const std::size_t n = r < 80   ? 8 + rng() % 1024
                                : r < 97 ? 1024 + rng() % 65536
                                         : 65536 + rng() % (1u << 20);
          blocks.emplace_back(b.Allocate(n), n);
          total += n;
        }
        if (rng() % 50 == 0) b.Allocate(1 + rng() % 65536);  // a fixture, never freed
        for (const auto& [ptr, size] : blocks) b.Free(ptr, size);
      });
}

Scenario DynamicShapeScenario(int requests, int layers, std::uint64_t seed) {
  return Generate(
      requests, seed, "dynamic-shape inference",
      "a 12-head transformer answers requests whose sequence length varies from 32 "
      "to 512; every activation size changes with the shape",
      [&](TraceBuilder& b, std::mt19937_64& rng, int) {
        const std::size_t seq = 32 * (1 + rng() % 16);
        b.StartPhase(seq);
        const std::size_t act = seq * kHidden * kFloat;
        const std::size_t scores_size = kHeads * seq * seq * kFloat;
        TransformerRequest(b, layers, act, seq * 1000 * kFloat, [&](TraceBuilder& t) {
          const std::uintptr_t qkv = t.Allocate(3 * act);
          const std::uintptr_t scores = t.Allocate(scores_size);
          const std::uintptr_t attn = t.Allocate(act);
          t.Free(scores, scores_size);
          t.Free(qkv, 3 * act);
          return attn;
        });
      });
}

Scenario BatchedInferenceScenario(int requests, int layers, std::uint64_t seed) {
  return Generate(
      requests, seed, "batched dynamic-shape inference",
      "a 6-layer transformer encoder (hidden 768, 12 heads, fp32) answers requests "
      "with batch 1-16 and sequence 16-512; every activation size changes with the shape",
      [&](TraceBuilder& b, std::mt19937_64& rng, int) {
        const std::size_t batch = 1 + rng() % 16;
        const std::size_t seq = 16 * (1 + rng() % 32);
        b.StartPhase(batch * 1024 + seq);
        const std::size_t row = batch * seq * kHidden * kFloat;
        const std::size_t scores = batch * kHeads * seq * seq * kFloat;
        // A small classifier head.
        TransformerRequest(b, layers, row, batch * 2 * kFloat, [&](TraceBuilder& t) {
          const std::uintptr_t qkv = t.Allocate(3 * row);
          const std::uintptr_t s = t.Allocate(scores);
          const std::uintptr_t p = t.Allocate(scores);
          t.Free(s, scores);
          const std::uintptr_t ctx = t.Allocate(row);
          t.Free(p, scores);
          t.Free(qkv, 3 * row);
          const std::uintptr_t attn = t.Allocate(row);
          t.Free(ctx, row);
          return attn;
        });
      });
}

}  // namespace memarena::tools
