// Reaching the ORT function table safely (version check, sanity check), turning OrtStatus
// into OrtError, and the registration helpers.
#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "memarena/ort.h"
#include "ort/ort_abi.h"

namespace memarena::ort {

const OrtApi* RequireOrtApi(const OrtApiBase* base, std::uint32_t version) {
  if (base == nullptr) throw OrtError("memarena: OrtGetApiBase() returned null");
  const auto* api_base = reinterpret_cast<const abi::ApiBase*>(base);
  const char* runtime_version = api_base->GetVersionString();
  const OrtApi* api = api_base->GetApi(version);
  if (api == nullptr) {
    throw OrtError(fmt::format(
        "memarena: ONNX Runtime {} does not provide C API version {} (memarena needs at least "
        "{}: OrtAllocator::GetStats); use ONNX Runtime 1.{} or newer",
        runtime_version ? runtime_version : "(unknown version)", version, kMinOrtApiVersion,
        kMinOrtApiVersion));
  }
  // The positions in ort_abi.h are facts of the ABI; check one that is easy to recognise so a
  // table that is not ORT's fails here instead of crashing later.
  const char* build_info =
      abi::Get<abi::GetBuildInfoStringFn>(api, abi::Entry::kGetBuildInfoString)();
  constexpr const char kExpected[] = "ORT Build Info";
  if (build_info == nullptr || std::strncmp(build_info, kExpected, sizeof(kExpected) - 1) != 0) {
    throw OrtError(fmt::format(
        "memarena: ONNX Runtime {} has an unexpected C API table (GetBuildInfoString gave '{}', "
        "expected it to start with '{}')",
        runtime_version ? runtime_version : "(unknown version)", build_info ? build_info : "(null)",
        kExpected));
  }
  return api;
}

void ThrowIfError(const OrtApi* api, OrtStatus* status, std::string_view what) {
  if (status == nullptr) return;
  std::string message = abi::Get<abi::GetErrorMessageFn>(api, abi::Entry::kGetErrorMessage)(status);
  abi::Get<abi::ReleaseStatusFn>(api, abi::Entry::kReleaseStatus)(status);
  throw OrtError(fmt::format("{}: {}", what, message));
}

void RegisterSharedAllocator(const OrtApi* api, OrtEnv* env, OrtAllocatorAdapter& adapter) {
  ThrowIfError(
      api,
      abi::Get<abi::RegisterAllocatorFn>(api, abi::Entry::kRegisterAllocator)(env, adapter.get()),
      fmt::format("memarena: ORT RegisterAllocator ({})", adapter.allocator().name()));
}

void UnregisterSharedAllocator(const OrtApi* api, OrtEnv* env, const OrtAllocatorAdapter& adapter) {
  ThrowIfError(api,
               abi::Get<abi::UnregisterAllocatorFn>(api, abi::Entry::kUnregisterAllocator)(
                   env, adapter.memory_info()),
               fmt::format("memarena: ORT UnregisterAllocator ({})", adapter.allocator().name()));
}

void UseEnvironmentAllocators(const OrtApi* api, OrtSessionOptions* options) {
  ThrowIfError(api,
               abi::Get<abi::AddSessionConfigEntryFn>(api, abi::Entry::kAddSessionConfigEntry)(
                   options, kUseEnvAllocatorsKey, "1"),
               fmt::format("memarena: ORT AddSessionConfigEntry({}=1)", kUseEnvAllocatorsKey));
}

}  // namespace memarena::ort
