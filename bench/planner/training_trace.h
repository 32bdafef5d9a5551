// Synthetic training traces: the tensor lifetimes of a transformer's training steps
// (forward, backward, optimizer), at the scale of real graphs (20,000-200,000 tensors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memarena/planner.h"

namespace memarena::bench {

struct TrainingTraceConfig {
  std::size_t layers = 24;
  std::size_t hidden = 1024;        // model width
  std::size_t heads = 16;
  std::size_t micro_batches = 4;    // gradient accumulation: forward+backward per micro-batch
  std::size_t steps = 1;            // optimizer steps
  std::size_t batch = 4;
  std::size_t max_sequence = 1024;  // each micro-batch draws its length up to this
  std::size_t checkpoint_every = 0;  // activation checkpointing of every k-th layer; 0: none
  std::uint64_t seed = 1;
};

// The tensors of the configured run, in allocation order:
//  - parameters and the optimizer's two moments live through the whole run;
//  - each layer's forward keeps its activations (layer norms, QKV, attention scores and
//    probabilities, dropout masks, MLP hidden states) until that layer's backward, and
//    frees its temporaries at once;
//  - with activation checkpointing, a checkpointed layer keeps only its input and runs its
//    forward again just before its backward;
//  - the backward walks the layers in reverse: activation gradients live for one or two
//    operations, weight gradients from the first micro-batch until the optimizer step;
//  - data-parallel gradient buckets (a layer's gradients) live until their all-reduce
//    completes, 2-7 layers later, so they end out of order;
//  - the optimizer step makes short fp32 temporaries per parameter.
// Sizes are bytes of fp16 activations (fp32 for masters and moments), rounded to 256.
std::vector<PlanTensor> TrainingTrace(const TrainingTraceConfig& config);

// A configuration whose trace has about `tensors` tensors (20,000 to 200,000 make sense):
// more layers and micro-batches for more tensors, widths and lengths drawn from `seed`.
TrainingTraceConfig TrainingTraceOfSize(std::size_t tensors, std::uint64_t seed);

}  // namespace memarena::bench
