// A stream gate on a real GPU (gpu_stream_gate.cu, compiled by nvcc as C++17, so this header
// takes no memarena header): a one-thread kernel that spins on a host-mapped flag holds a
// stream's later work until the test opens the gate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace memarena::cuda::gpu_gate {

// False, with the runtime's reason, when no CUDA device can be used.
bool DeviceUsable(std::string* reason);
// cudaMemGetInfo on the current device.
std::size_t TotalBytes();
std::size_t UsedBytes();

// Launches the spin kernel on `stream` (a cudaStream_t; cudaStreamPerThread means the calling
// thread's stream) and returns the gate. Throws std::runtime_error naming the failed call.
struct Gate;
Gate* Close(std::uintptr_t stream);
// Sets the gate's flag, waits until its kernel has finished and frees the gate.
void Open(Gate* gate);

// cudaStreamBeginCapture (global mode) and the capture's id; cudaStreamEndCapture, false when
// the capture was invalidated.
std::uint64_t BeginCapture(std::uintptr_t stream);
bool EndCapture(std::uintptr_t stream);

}  // namespace memarena::cuda::gpu_gate
