// What the device-logic tests control on a device: streams whose work stays queued until the
// test lets it finish, and global-mode captures. On the fake runtime (FakeStreamControl,
// fake_stream_control.h) the fake does it; on a GPU (MakeGpuStreamControl, gpu_stream_gate.cu) a one-thread kernel spins
// on a host-mapped flag, so the same test rows run against the real runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "device_runtime.h"

namespace memarena::cuda {

class StreamControl {
 public:
  virtual ~StreamControl() = default;
  // False, with the reason, when the tests cannot run (no usable GPU).
  virtual bool Usable(std::string* reason) = 0;
  // True for the fake runtime: the rows that inject failures run only there.
  virtual bool fake() const = 0;
  // The device the pluggable-ABI test numbered `n` uses: its own on the fake (the ABI keeps one
  // arena per device), device 0 on a GPU.
  virtual int Device(int n) const = 0;
  virtual std::size_t DeviceTotalBytes() = 0;
  // Bytes the device has handed out (cudaMalloc'd and not freed, on the fake; total - free on
  // a GPU).
  virtual std::size_t DeviceBytesInUse() = 0;
  // Queues work on `stream` (from this thread, for cudaStreamPerThread) that does not finish
  // before Release(stream).
  virtual void Hold(DeviceStream stream) = 0;
  // Lets all work held on `stream` finish and waits for it (for cudaStreamPerThread, call it
  // from the thread that held it).
  virtual void Release(DeviceStream stream) = 0;
  // cudaStreamBeginCapture in global mode; returns the capture's id.
  virtual std::uint64_t BeginCapture(DeviceStream stream) = 0;
  // cudaStreamEndCapture; false when the capture was invalidated.
  virtual bool EndCapture(DeviceStream stream) = 0;
};

// The GPU's control (device 0, the real runtime); defined by gpu_stream_gate.cu.
std::unique_ptr<StreamControl> MakeGpuStreamControl();

}  // namespace memarena::cuda
