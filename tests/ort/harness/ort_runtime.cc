// Loading libonnxruntime with dlopen and driving sessions through the function table; every
// ORT failure becomes an OrtError with ORT's message.
#include "ort_runtime.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ort/ort_abi.h"

namespace memarena::ort::testing {

namespace abi = memarena::ort::abi;

RuntimeLocation LocateRuntime() {
  RuntimeLocation where;
  if (const char* env = std::getenv("MEMARENA_ORT_LIBRARY"); env != nullptr && *env != '\0') {
    where.library = env;
  } else {
#ifdef MEMARENA_ORT_DEFAULT_LIBRARY
    where.library = MEMARENA_ORT_DEFAULT_LIBRARY;
#endif
  }
  if (where.library.empty()) {
    where.skip_reason = "no ONNX Runtime library configured (set MEMARENA_ORT_LIBRARY)";
  } else if (!std::filesystem::exists(where.library)) {
    where.skip_reason = fmt::format("ONNX Runtime library {} is missing", where.library);
#ifdef MEMARENA_ORT_SKIP_REASON_FILE
    std::ifstream reason_file(MEMARENA_ORT_SKIP_REASON_FILE);
    std::stringstream reason;
    reason << reason_file.rdbuf();
    if (!reason.str().empty()) where.skip_reason += ": " + reason.str();
#endif
  }
  return where;
}

Runtime::Runtime(const std::string& library) {
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* error = dlerror();
    throw OrtError(fmt::format("memarena: cannot load ONNX Runtime from {}: {}", library,
                               error ? error : "unknown dlopen error"));
  }
  using GetApiBaseFn = const OrtApiBase* (*)();
  auto get_api_base = reinterpret_cast<GetApiBaseFn>(dlsym(handle_, "OrtGetApiBase"));
  if (get_api_base == nullptr) {
    throw OrtError(fmt::format("memarena: {} has no OrtGetApiBase symbol", library));
  }
  api_base_ = get_api_base();
  api_ = RequireOrtApi(api_base_);
  ThrowIfError(api_,
               abi::Get<abi::CreateEnvFn>(api_, abi::Entry::kCreateEnv)(abi::kOrtLoggingError,
                                                                        "memarena", &env_),
               "memarena: ORT CreateEnv");
  ThrowIfError(api_,
               abi::Get<abi::CreateCpuMemoryInfoFn>(api_, abi::Entry::kCreateCpuMemoryInfo)(
                   abi::kOrtDeviceAllocator, abi::kOrtMemTypeDefault, &cpu_memory_),
               "memarena: ORT CreateCpuMemoryInfo");
}

Runtime::~Runtime() {
  if (api_ == nullptr) return;
  abi::Get<abi::ReleaseMemoryInfoFn>(api_, abi::Entry::kReleaseMemoryInfo)(cpu_memory_);
  abi::Get<abi::ReleaseEnvFn>(api_, abi::Entry::kReleaseEnv)(env_);
  // No dlclose: ORT keeps process-wide state (logging, thread pools) until exit.
}

std::string Runtime::version() const {
  return reinterpret_cast<const abi::ApiBase*>(api_base_)->GetVersionString();
}

Session::Session(const Runtime& runtime, const TinyModel& model, bool use_env_allocators)
    : runtime_(runtime), width_(model.width) {
  const OrtApi* api = runtime.api();
  OrtSessionOptions* options = nullptr;
  ThrowIfError(
      api, abi::Get<abi::CreateSessionOptionsFn>(api, abi::Entry::kCreateSessionOptions)(&options),
      "memarena: ORT CreateSessionOptions");
  const auto release_options = [&] {
    abi::Get<abi::ReleaseSessionOptionsFn>(api, abi::Entry::kReleaseSessionOptions)(options);
  };
  try {
    ThrowIfError(api,
                 abi::Get<abi::SetThreadsFn>(api, abi::Entry::kSetIntraOpNumThreads)(options, 1),
                 "memarena: ORT SetIntraOpNumThreads");
    ThrowIfError(api,
                 abi::Get<abi::SetThreadsFn>(api, abi::Entry::kSetInterOpNumThreads)(options, 1),
                 "memarena: ORT SetInterOpNumThreads");
    if (use_env_allocators) UseEnvironmentAllocators(api, options);
    ThrowIfError(api,
                 abi::Get<abi::CreateSessionFromArrayFn>(api, abi::Entry::kCreateSessionFromArray)(
                     runtime.env(), model.bytes.data(), model.bytes.size(), options, &session_),
                 "memarena: ORT CreateSessionFromArray");
  } catch (...) {
    release_options();
    throw;
  }
  release_options();
}

Session::~Session() {
  abi::Get<abi::ReleaseSessionFn>(runtime_.api(), abi::Entry::kReleaseSession)(session_);
}

std::vector<float> Session::Run(const std::vector<float>& input, std::int64_t batch) const {
  const OrtApi* api = runtime_.api();
  const auto release_value = abi::Get<abi::ReleaseValueFn>(api, abi::Entry::kReleaseValue);
  const std::int64_t shape[2] = {batch, static_cast<std::int64_t>(width_)};
  OrtValue* x = nullptr;
  ThrowIfError(
      api,
      abi::Get<abi::CreateTensorWithDataFn>(api, abi::Entry::kCreateTensorWithDataAsOrtValue)(
          runtime_.cpu_memory(), const_cast<float*>(input.data()), input.size() * sizeof(float),
          shape, 2, abi::kFloat, &x),
      "memarena: ORT CreateTensorWithDataAsOrtValue");
  const char* input_names[] = {"X"};
  const char* output_names[] = {"Y"};
  OrtValue* y = nullptr;
  OrtStatus* status = abi::Get<abi::RunFn>(api, abi::Entry::kRun)(session_, nullptr, input_names,
                                                                  &x, 1, output_names, 1, &y);
  release_value(x);
  ThrowIfError(api, status, "memarena: ORT Run");

  std::vector<float> result;
  try {
    OrtTensorTypeAndShapeInfo* info = nullptr;
    ThrowIfError(
        api,
        abi::Get<abi::GetTensorTypeAndShapeFn>(api, abi::Entry::kGetTensorTypeAndShape)(y, &info),
        "memarena: ORT GetTensorTypeAndShape");
    std::size_t count = 0;
    OrtStatus* count_status = abi::Get<abi::GetTensorShapeElementCountFn>(
        api, abi::Entry::kGetTensorShapeElementCount)(info, &count);
    abi::Get<abi::ReleaseTensorTypeAndShapeInfoFn>(
        api, abi::Entry::kReleaseTensorTypeAndShapeInfo)(info);
    ThrowIfError(api, count_status, "memarena: ORT GetTensorShapeElementCount");
    void* data = nullptr;
    ThrowIfError(
        api,
        abi::Get<abi::GetTensorMutableDataFn>(api, abi::Entry::kGetTensorMutableData)(y, &data),
        "memarena: ORT GetTensorMutableData");
    result.assign(static_cast<const float*>(data), static_cast<const float*>(data) + count);
  } catch (...) {
    release_value(y);
    throw;
  }
  release_value(y);
  return result;
}

}  // namespace memarena::ort::testing
