// The built-in scenarios `memarena demo` replays: generated traces with their phases, so the
// demo needs no input files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memarena/tracing.h"
#include "replay.h"

namespace memarena::tools {

struct Scenario {
  std::string name;
  std::string description;
  std::vector<TraceEvent> trace;
  std::vector<Phase> phases;
};

// A single-process test suite (the shape of examples/ceiling_demo): `cases` test cases,
// each allocating 2-6 MiB of mixed sizes (80% up to 1 KiB, 17% up to 64 KiB, 3% up to 1 MiB)
// and freeing them; every 50th case leaves a fixture of up to 64 KiB behind for good. One
// phase per case.
Scenario TestSuiteScenario(int cases, std::uint64_t seed);

// Transformer-style inference with dynamic shapes: `requests` requests, each with a sequence
// length drawn from 32..512 (steps of 32); `layers` layers each allocate q/k/v, the attention
// scores (heads x seq x seq), the attention output and the MLP activations, freeing them as
// the layer proceeds. One phase per request, keyed by its sequence length (the input shape).
Scenario DynamicShapeScenario(int requests, int layers, std::uint64_t seed);

// Batched transformer-encoder inference with dynamic shapes (issue 19's trace): `requests`
// requests with batch 1-16 and sequence 16-512 (steps of 16), hidden 768, 12 heads, fp32.
// Each of `layers` layers allocates q/k/v, the attention scores and their softmax
// (batch x heads x seq x seq), the context, the attention output and the MLP activations in
// an executor's order. 280 requests of 6 layers are about 25k events with a peak of up to
// 480 MiB requested. One phase per request, keyed by batch * 1024 + seq.
Scenario BatchedInferenceScenario(int requests, int layers, std::uint64_t seed);

}  // namespace memarena::tools
