// The CUDA StreamFence: one pooled event per free, per-stream sequence numbers, and
// non-blocking completion checks with cudaEventQuery.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "device_check.h"
#include "device_guard.h"
#include "memarena/cuda.h"

namespace memarena::cuda {
namespace {

cudaStream_t ToCudaStream(StreamHandle handle) noexcept {
  return reinterpret_cast<cudaStream_t>(handle - 1);
}

class EventFence final : public StreamFence {
 public:
  explicit EventFence(int device) : device_(device) {}

  ~EventFence() override {
    DeviceGuard guard(device_);
    for (cudaEvent_t e : pool_) cudaEventDestroy(e);
    for (auto& [handle, state] : streams_) {
      for (const Pending& p : state.pending) cudaEventDestroy(p.event);
    }
  }

  std::uint64_t Record(StreamHandle stream) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceGuard guard(device_);
    StreamState& state = streams_[stream];
    const std::uint64_t seq = ++state.recorded;
    cudaEvent_t event = TakeEvent();
    if (event != nullptr && cudaEventRecord(event, ToCudaStream(stream)) == cudaSuccess) {
      try {
        state.pending.push_back({seq, event});
        return seq;
      } catch (...) {
        // fall through: wait instead of tracking
      }
    }
    // Cannot track the point in the stream: wait for it, so the sequence is complete.
    cudaGetLastError();
    if (event != nullptr) cudaEventDestroy(event);
    cudaStreamSynchronize(ToCudaStream(stream));
    cudaGetLastError();
    Complete(state, seq);
    return seq;
  }

  bool HasCompleted(StreamHandle stream, std::uint64_t seq) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = streams_.find(stream);
    if (it == streams_.end()) return true;
    StreamState& state = it->second;
    if (seq <= state.completed) return true;
    DeviceGuard guard(device_);
    while (!state.pending.empty()) {  // events on one stream complete in order
      const Pending front = state.pending.front();
      const cudaError_t status = cudaEventQuery(front.event);
      if (status == cudaErrorNotReady) break;
      // Success, or an error that means the work will never run: either way it is over.
      cudaGetLastError();
      state.pending.pop_front();
      Complete(state, front.seq);
      ReturnEvent(front.event);
    }
    return seq <= state.completed;
  }

 private:
  struct Pending {
    std::uint64_t seq;
    cudaEvent_t event;
  };
  struct StreamState {
    std::uint64_t recorded = 0;
    std::uint64_t completed = 0;
    std::deque<Pending> pending;
  };

  static void Complete(StreamState& state, std::uint64_t seq) noexcept {
    if (seq > state.completed) state.completed = seq;
  }

  cudaEvent_t TakeEvent() noexcept {
    if (!pool_.empty()) {
      cudaEvent_t e = pool_.back();
      pool_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) return nullptr;
    return e;
  }

  void ReturnEvent(cudaEvent_t e) noexcept {
    try {
      pool_.push_back(e);
    } catch (...) {
      cudaEventDestroy(e);
    }
  }

  int device_;
  std::mutex mutex_;
  std::unordered_map<StreamHandle, StreamState> streams_;
  std::vector<cudaEvent_t> pool_;
};

}  // namespace

std::shared_ptr<StreamFence> MakeEventFence(int device) {
  RequireDevice(device);
  return std::make_shared<EventFence>(device);
}

}  // namespace memarena::cuda
