// StreamControl on a real GPU (device 0): holds are gpu_gate's spin kernels, kept per stream
// (per thread for cudaStreamPerThread) until Release opens them.
#include <map>
#include <mutex>
#include <vector>

#include "gpu_stream_gate.h"
#include "stream_control.h"

namespace memarena::cuda {
namespace {

class GpuStreamControl final : public StreamControl {
 public:
  ~GpuStreamControl() override {
    for (auto& [key, gates] : gates_) {
      for (gpu_gate::Gate* g : gates) gpu_gate::Open(g);  // never leave a kernel spinning
    }
  }
  bool Usable(std::string* reason) override { return gpu_gate::DeviceUsable(reason); }
  bool fake() const override { return false; }
  int Device(int) const override { return 0; }
  std::size_t DeviceTotalBytes() override { return gpu_gate::TotalBytes(); }
  std::size_t DeviceBytesInUse() override { return gpu_gate::UsedBytes(); }
  void Hold(DeviceStream stream) override {
    gpu_gate::Gate* gate = gpu_gate::Close(stream.value);
    std::lock_guard<std::mutex> lock(mutex_);
    gates_[Key(stream)].push_back(gate);
  }
  void Release(DeviceStream stream) override {
    std::vector<gpu_gate::Gate*> gates;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      gates.swap(gates_[Key(stream)]);
    }
    for (gpu_gate::Gate* g : gates) gpu_gate::Open(g);
  }
  std::uint64_t BeginCapture(DeviceStream stream) override {
    return gpu_gate::BeginCapture(stream.value);
  }
  bool EndCapture(DeviceStream stream) override { return gpu_gate::EndCapture(stream.value); }

 private:
  // cudaStreamPerThread is a different stream in every thread.
  static StreamKey Key(DeviceStream stream) { return GetDeviceRuntime()->ResolveStream(stream); }

  std::mutex mutex_;
  std::map<StreamKey, std::vector<gpu_gate::Gate*>> gates_;
};

}  // namespace

std::unique_ptr<StreamControl> MakeGpuStreamControl() {
  return std::make_unique<GpuStreamControl>();
}

}  // namespace memarena::cuda
