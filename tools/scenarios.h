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
  std::vector<TraceRecord> trace;
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

}  // namespace memarena::tools
