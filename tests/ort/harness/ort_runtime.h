// The real ONNX Runtime for tests and benchmarks: finding the library installed from npm,
// loading it with dlopen, and running TinyModel sessions through the C API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memarena/ort.h"
#include "tiny_model.h"

struct OrtSession;

namespace memarena::ort::testing {

struct RuntimeLocation {
  std::string library;      // path of libonnxruntime.so.1
  std::string skip_reason;  // why there is none (empty when `library` exists)
};

// MEMARENA_ORT_LIBRARY when set, else the onnxruntime-node package that the ort_runtime
// fixture installs under the build tree. When the file is missing, skip_reason says why
// (the install script's own reason when it wrote one).
RuntimeLocation LocateRuntime();

// A loaded runtime with its (process-wide) OrtEnv. Throws OrtError when the library cannot
// be loaded, lacks OrtGetApiBase, is older than kMinOrtApiVersion, or CreateEnv fails.
class Runtime {
 public:
  explicit Runtime(const std::string& library);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const OrtApi* api() const noexcept { return api_; }
  const OrtApiBase* api_base() const noexcept { return api_base_; }
  OrtEnv* env() const noexcept { return env_; }
  const OrtMemoryInfo* cpu_memory() const noexcept { return cpu_memory_; }
  std::string version() const;

 private:
  void* handle_ = nullptr;
  const OrtApiBase* api_base_ = nullptr;
  const OrtApi* api_ = nullptr;
  OrtEnv* env_ = nullptr;
  OrtMemoryInfo* cpu_memory_ = nullptr;
};

// One inference session of a TinyModel, single-threaded so runs are reproducible.
class Session {
 public:
  // use_env_allocators: allocate from the allocator registered with the environment
  // (session.use_env_allocators=1); otherwise ORT's own per-session CPU arena.
  Session(const Runtime& runtime, const TinyModel& model, bool use_env_allocators);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Y for `input` ([batch, width]). Throws OrtError carrying ORT's message when Run fails.
  std::vector<float> Run(const std::vector<float>& input, std::int64_t batch) const;
  OrtSession* get() const noexcept { return session_; }

 private:
  const Runtime& runtime_;
  std::size_t width_;
  OrtSession* session_ = nullptr;
};

}  // namespace memarena::ort::testing
