// Generated planner inputs beside the training traces: an inference-style trace, random
// intervals, and every tensor alive at once (shared by planner_bench and planner_tracegen).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memarena/planner.h"

namespace memarena::bench {

// Mostly short-lived activations, some long skip connections, sizes log-uniform from
// 256 B to 16 MiB.
std::vector<PlanTensor> SyntheticTrace(std::size_t tensors, std::uint64_t seed);

// Lifetimes scattered at random over a long run (no stack discipline), where greedy by
// size leaves room above the lower bound.
std::vector<PlanTensor> RandomIntervals(std::size_t tensors, std::uint64_t seed);

// Every tensor alive at once: the case where pairwise overlap lists are quadratic.
std::vector<PlanTensor> AllAlive(std::size_t tensors, std::uint64_t seed);

}  // namespace memarena::bench
