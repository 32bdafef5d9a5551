// The transformer training-trace generator (see training_trace.h).
#include "training_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <random>
#include <utility>

namespace memarena::bench {
namespace {

// Records lifetimes on an operation clock: every operation is one time step.
class Recorder {
 public:
  std::size_t Alloc(std::size_t bytes) {
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256;
    tensors_.push_back({fmt::format("t{}", tensors_.size()), rounded, 256, now_, -1});
    return tensors_.size() - 1;
  }
  void Free(std::size_t id) { tensors_[id].upper = now_ + 1; }
  void Tick() { ++now_; }
  std::size_t Size(std::size_t id) const { return tensors_[id].size; }
  // An operation's scratch: allocated and freed within this step.
  void Scratch(std::size_t bytes) { Free(Alloc(bytes)); }
  std::vector<PlanTensor> Finish() {
    Tick();
    for (PlanTensor& t : tensors_) {
      if (t.upper < 0) t.upper = now_;
    }
    return std::move(tensors_);
  }

 private:
  std::vector<PlanTensor> tensors_;
  std::int64_t now_ = 0;
};

struct LayerWeights {
  std::vector<std::size_t> sizes;  // bytes (fp16) of each weight of one layer
};

LayerWeights TransformerLayerWeights(std::size_t h) {
  // ln1 w/b, qkv w/b, proj w/b, ln2 w/b, fc1 w/b, fc2 w/b.
  return {{2 * h, 2 * h, 2 * 3 * h * h, 2 * 3 * h, 2 * h * h, 2 * h, 2 * h, 2 * h,
           2 * 4 * h * h, 2 * 4 * h, 2 * 4 * h * h, 2 * h}};
}

}  // namespace

std::vector<PlanTensor> TrainingTrace(const TrainingTraceConfig& c) {
  std::mt19937_64 rng(c.seed);
  Recorder r;
  const std::size_t h = c.hidden;
  const LayerWeights weights = TransformerLayerWeights(h);
  // Parameters (fp16 working copy, fp32 master) and Adam's two fp32 moments.
  std::vector<std::vector<std::size_t>> params(c.layers);
  for (std::size_t l = 0; l < c.layers; ++l) {
    for (std::size_t w : weights.sizes) {
      params[l].push_back(r.Alloc(w));
      r.Alloc(2 * w);  // fp32 master
      r.Alloc(2 * w);  // first moment
      r.Alloc(2 * w);  // second moment
    }
    r.Tick();
  }
  for (std::size_t step = 0; step < c.steps; ++step) {
    std::vector<std::vector<std::size_t>> grads(c.layers);
    for (std::size_t mb = 0; mb < c.micro_batches; ++mb) {
      const std::size_t s = std::max<std::size_t>(64, c.max_sequence / 2 + rng() % (c.max_sequence / 2 + 1));
      const std::size_t bsh = c.batch * s * h * 2;
      const std::size_t scores = c.batch * c.heads * s * s * 2;
      std::size_t hidden_state = r.Alloc(bsh);  // embeddings
      r.Tick();
      std::vector<std::vector<std::size_t>> kept(c.layers);
      std::vector<std::pair<std::size_t, std::size_t>> buckets;  // (tensor, steps left)
      // One layer's forward: the activations its backward needs go to kept[l]; returns the
      // residual output, the next layer's input.
      auto forward_layer = [&](std::size_t l) {
        auto keep = [&](std::size_t bytes) {
          kept[l].push_back(r.Alloc(bytes));
          r.Tick();
        };
        keep(bsh);                   // ln1 output
        r.Scratch(c.batch * s * 8);  // ln1 statistics
        keep(3 * bsh);               // qkv
        r.Scratch(3 * bsh);          // head transpose
        r.Tick();
        keep(scores);                // attention scores
        keep(scores);                // softmax probabilities
        keep(scores / 2);            // dropout mask
        keep(bsh);                   // attention context
        r.Scratch(bsh);              // merge heads
        r.Tick();
        keep(bsh);                   // projection output
        keep(bsh);                   // residual 1
        keep(bsh);                   // ln2 output
        keep(4 * bsh);               // fc1 output
        keep(4 * bsh);               // gelu output
        r.Scratch(4 * bsh / 2);      // gelu scratch
        r.Tick();
        keep(bsh);                   // fc2 output
        const std::size_t next = r.Alloc(bsh);  // residual 2
        r.Tick();
        return next;
      };
      // Activation checkpointing: a checkpointed layer keeps only its input and recomputes
      // its activations right before its backward.
      auto checkpointed = [&](std::size_t l) {
        return c.checkpoint_every != 0 && l % c.checkpoint_every == 0;
      };
      std::vector<std::size_t> layer_input(c.layers);
      for (std::size_t l = 0; l < c.layers; ++l) {
        const std::size_t next = forward_layer(l);
        if (checkpointed(l)) {
          for (const std::size_t activation : kept[l]) r.Free(activation);
          kept[l].clear();
          layer_input[l] = hidden_state;
        } else {
          r.Free(hidden_state);
        }
        hidden_state = next;
        r.Tick();
      }
      // Loss head and its gradient.
      const std::size_t logits = r.Alloc(c.batch * s * 32000 * 2);
      r.Tick();
      std::size_t grad = r.Alloc(bsh);
      r.Free(logits);
      r.Free(hidden_state);
      r.Tick();
      for (std::size_t l = c.layers; l-- > 0;) {
        if (checkpointed(l)) {
          r.Free(forward_layer(l));  // recompute; the output itself is not needed again
        }
        // Activation gradients flow back through the layer's ops, each freeing the one
        // before; activations are freed as soon as their gradient step used them.
        for (std::size_t k = kept[l].size(); k-- > 0;) {
          const std::size_t activation = kept[l][k];
          const std::size_t next_grad = r.Alloc(r.Size(activation));
          if (k % 3 == 0) r.Scratch(r.Size(activation));
          r.Free(grad);
          r.Free(activation);
          grad = next_grad;
          r.Tick();
        }
        if (checkpointed(l)) r.Free(layer_input[l]);
        // Weight gradients: created in the first micro-batch, accumulated in the others.
        std::size_t layer_grad_bytes = 0;
        for (std::size_t w = 0; w < weights.sizes.size(); ++w) {
          layer_grad_bytes += weights.sizes[w];
          if (mb == 0) {
            grads[l].push_back(r.Alloc(weights.sizes[w]));
          } else {
            r.Scratch(weights.sizes[w]);  // this micro-batch's contribution, then added
          }
        }
        // Data-parallel reduction: the layer's gradients are copied into a bucket that
        // lives until its all-reduce completes, a few operations later, out of order.
        buckets.push_back({r.Alloc(layer_grad_bytes), 2 + rng() % 6});
        for (auto it = buckets.begin(); it != buckets.end();) {
          if (it->second-- == 0) {
            r.Free(it->first);
            it = buckets.erase(it);
          } else {
            ++it;
          }
        }
        r.Tick();
      }
      r.Free(grad);
      for (const auto& bucket : buckets) r.Free(bucket.first);
      buckets.clear();
      r.Tick();
    }
    // Optimizer: per parameter, fp32 temporaries for the update; gradients die after it.
    for (std::size_t l = 0; l < c.layers; ++l) {
      for (std::size_t w = 0; w < weights.sizes.size(); ++w) {
        const std::size_t g32 = r.Alloc(2 * weights.sizes[w]);
        r.Tick();
        r.Scratch(2 * weights.sizes[w]);
        r.Free(g32);
        r.Free(grads[l][w]);
        r.Tick();
      }
    }
  }
  return r.Finish();
}

TrainingTraceConfig TrainingTraceOfSize(std::size_t tensors, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  TrainingTraceConfig c;
  c.seed = seed;
  c.hidden = std::size_t{512} << (rng() % 3);
  c.heads = c.hidden / 64;
  c.max_sequence = std::size_t{256} << (rng() % 3);
  c.batch = 1 + rng() % 4;
  c.layers = 12 + rng() % 37;
  c.checkpoint_every = std::array<std::size_t, 3>{0, 1, 2}[rng() % 3];
  // Per layer and micro-batch: 13 kept activations and their gradients, 9 scratch, 12
  // weight gradients (or scratch), the next input, and a checkpointed layer's recomputed
  // forward (13 + 5 + 1); parameters and moments: 48 per layer.
  const std::size_t recomputed =
      c.checkpoint_every == 0 ? 0 : c.layers / c.checkpoint_every * (13 + 5 + 1);
  const std::size_t per_micro_batch = c.layers * (13 * 2 + 9 + 12 + 1) + recomputed + 4;
  const std::size_t fixed = c.layers * 48;
  c.micro_batches = std::max<std::size_t>(1, (tensors - std::min(tensors, fixed)) / per_micro_batch);
  return c;
}

}  // namespace memarena::bench
