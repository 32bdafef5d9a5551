// The few facts of ONNX Runtime's public C ABI that memarena relies on: the OrtAllocator
// layout, the OrtApi function-table positions we call, and their signatures.
//
// Source: include/onnxruntime/core/session/onnxruntime_c_api.h of ONNX Runtime 1.30.0
// (ORT_API_VERSION 30). OrtApi only ever grows at its end, so a position is valid in every
// runtime whose API version is at least the one that added the entry; GetApi(version)
// returns null for a runtime older than `version`. Our own names live in memarena::ort::abi
// so that a program which also includes ORT's header sees no second definition.
#pragma once

#include <cstddef>
#include <cstdint>

struct OrtApi;
struct OrtApiBase;
struct OrtEnv;
struct OrtStatus;
struct OrtMemoryInfo;
struct OrtSession;
struct OrtSessionOptions;
struct OrtValue;
struct OrtRunOptions;
struct OrtKeyValuePairs;
struct OrtTensorTypeAndShapeInfo;
struct OrtAllocator;
struct OrtArenaCfg;

namespace memarena::ort::abi {

// OrtApiBase: GetApi(version) then GetVersionString().
struct ApiBase {
  const OrtApi* (*GetApi)(std::uint32_t version) noexcept;
  const char* (*GetVersionString)() noexcept;
};

// OrtAllocator, field by field, with the API version that added each optional field.
struct Allocator {
  std::uint32_t version;
  void* (*Alloc)(Allocator* self, std::size_t size);
  void (*Free)(Allocator* self, void* p);
  const OrtMemoryInfo* (*Info)(const Allocator* self);
  void* (*Reserve)(Allocator* self, std::size_t size);                      // 18
  OrtStatus* (*GetStats)(const Allocator* self, OrtKeyValuePairs** out);    // 23
  void* (*AllocOnStream)(Allocator* self, std::size_t size, void* stream);  // 23
  OrtStatus* (*Shrink)(Allocator* self);                                    // 25
};
// The OrtAllocator version our adapter fills in: every field above.
inline constexpr std::uint32_t kAllocatorVersion = 25;

// Enumerations we pass (values from the header).
enum OrtAllocatorType : int { kOrtDeviceAllocator = 0, kOrtArenaAllocator = 1 };
enum OrtMemType : int { kOrtMemTypeDefault = 0 };
enum OrtErrorCode : int { kOrtOk = 0, kOrtFail = 1, kOrtInvalidArgument = 2 };
enum OrtLoggingLevel : int { kOrtLoggingWarning = 2, kOrtLoggingError = 3 };
enum ElementType : int { kFloat = 1 };

// OrtApi positions (0-based index into the table of function pointers).
enum class Entry : std::size_t {
  kCreateStatus = 0,
  kGetErrorCode = 1,
  kGetErrorMessage = 2,
  kCreateEnv = 3,
  kCreateSessionFromArray = 8,
  kRun = 9,
  kCreateSessionOptions = 10,
  kDisableCpuMemArena = 19,
  kSetIntraOpNumThreads = 24,
  kSetInterOpNumThreads = 25,
  kCreateTensorWithDataAsOrtValue = 49,
  kGetTensorMutableData = 51,
  kGetTensorShapeElementCount = 64,
  kGetTensorTypeAndShape = 65,
  kCreateMemoryInfo = 68,
  kCreateCpuMemoryInfo = 69,
  kReleaseEnv = 92,
  kReleaseStatus = 93,
  kReleaseMemoryInfo = 94,
  kReleaseSession = 95,
  kReleaseValue = 96,
  kReleaseTensorTypeAndShapeInfo = 99,
  kReleaseSessionOptions = 100,
  kAddSessionConfigEntry = 130,
  kCreateAllocator = 131,
  kReleaseAllocator = 132,
  kCreateAndRegisterAllocator = 144,
  kReleaseArenaCfg = 157,
  kCreateArenaCfgV2 = 164,
  kRegisterAllocator = 176,
  kUnregisterAllocator = 177,
  kGetSessionConfigEntry = 238,
  kGetBuildInfoString = 254,
  kCreateKeyValuePairs = 295,
  kAddKeyValuePair = 296,
  kGetKeyValue = 297,
  kGetKeyValuePairs = 298,
  kReleaseKeyValuePairs = 300,
  kAllocatorGetStats = 319,
};

// Signatures of the entries above, in the same order.
using CreateStatusFn = OrtStatus* (*)(int code, const char* msg) noexcept;
using GetErrorCodeFn = int (*)(const OrtStatus*) noexcept;
using GetErrorMessageFn = const char* (*)(const OrtStatus*) noexcept;
using CreateEnvFn = OrtStatus* (*)(int level, const char* logid, OrtEnv** out) noexcept;
using CreateSessionFromArrayFn = OrtStatus* (*)(const OrtEnv*, const void* model, std::size_t len,
                                                const OrtSessionOptions*,
                                                OrtSession** out) noexcept;
using RunFn = OrtStatus* (*)(OrtSession*, const OrtRunOptions*, const char* const* input_names,
                             const OrtValue* const* inputs, std::size_t input_count,
                             const char* const* output_names, std::size_t output_count,
                             OrtValue** outputs) noexcept;
using CreateSessionOptionsFn = OrtStatus* (*)(OrtSessionOptions** out) noexcept;
using SessionOptionsFn = OrtStatus* (*)(OrtSessionOptions*) noexcept;
using SetThreadsFn = OrtStatus* (*)(OrtSessionOptions*, int threads) noexcept;
using CreateTensorWithDataFn = OrtStatus* (*)(const OrtMemoryInfo*, void* data, std::size_t bytes,
                                              const std::int64_t* shape, std::size_t rank,
                                              int element_type, OrtValue** out) noexcept;
using GetTensorMutableDataFn = OrtStatus* (*)(OrtValue*, void** out) noexcept;
using GetTensorShapeElementCountFn = OrtStatus* (*)(const OrtTensorTypeAndShapeInfo*,
                                                    std::size_t* out) noexcept;
using GetTensorTypeAndShapeFn = OrtStatus* (*)(const OrtValue*,
                                               OrtTensorTypeAndShapeInfo** out) noexcept;
using CreateMemoryInfoFn = OrtStatus* (*)(const char* name, int allocator_type, int device_id,
                                          int mem_type, OrtMemoryInfo** out) noexcept;
using CreateCpuMemoryInfoFn = OrtStatus* (*)(int allocator_type, int mem_type,
                                             OrtMemoryInfo** out) noexcept;
using ReleaseEnvFn = void (*)(OrtEnv*) noexcept;
using ReleaseStatusFn = void (*)(OrtStatus*) noexcept;
using ReleaseMemoryInfoFn = void (*)(OrtMemoryInfo*) noexcept;
using ReleaseSessionFn = void (*)(OrtSession*) noexcept;
using ReleaseValueFn = void (*)(OrtValue*) noexcept;
using ReleaseTensorTypeAndShapeInfoFn = void (*)(OrtTensorTypeAndShapeInfo*) noexcept;
using ReleaseSessionOptionsFn = void (*)(OrtSessionOptions*) noexcept;
using AddSessionConfigEntryFn = OrtStatus* (*)(OrtSessionOptions*, const char* key,
                                               const char* value) noexcept;
using CreateAllocatorFn = OrtStatus* (*)(const OrtSession*, const OrtMemoryInfo*,
                                         OrtAllocator** out) noexcept;
using ReleaseAllocatorFn = void (*)(OrtAllocator*) noexcept;
using CreateAndRegisterAllocatorFn = OrtStatus* (*)(OrtEnv*, const OrtMemoryInfo*,
                                                    const OrtArenaCfg*) noexcept;
using ReleaseArenaCfgFn = void (*)(OrtArenaCfg*) noexcept;
using CreateArenaCfgV2Fn = OrtStatus* (*)(const char* const* keys, const std::size_t* values,
                                          std::size_t count, OrtArenaCfg** out) noexcept;
using RegisterAllocatorFn = OrtStatus* (*)(OrtEnv*, OrtAllocator*) noexcept;
using UnregisterAllocatorFn = OrtStatus* (*)(OrtEnv*, const OrtMemoryInfo*) noexcept;
using GetSessionConfigEntryFn = OrtStatus* (*)(const OrtSessionOptions*, const char* key,
                                               char* value, std::size_t* size) noexcept;
using GetBuildInfoStringFn = const char* (*)() noexcept;
using CreateKeyValuePairsFn = void (*)(OrtKeyValuePairs** out) noexcept;
using AddKeyValuePairFn = void (*)(OrtKeyValuePairs*, const char* key, const char* value) noexcept;
using GetKeyValueFn = const char* (*)(const OrtKeyValuePairs*, const char* key) noexcept;
using GetKeyValuePairsFn = void (*)(const OrtKeyValuePairs*, const char* const** keys,
                                    const char* const** values, std::size_t* count) noexcept;
using ReleaseKeyValuePairsFn = void (*)(OrtKeyValuePairs*) noexcept;
using AllocatorGetStatsFn = OrtStatus* (*)(const OrtAllocator*, OrtKeyValuePairs** out) noexcept;

// The function at `entry` of the table `api`, typed as Fn.
template <typename Fn>
Fn Get(const OrtApi* api, Entry entry) noexcept {
  using Generic = void (*)();
  return reinterpret_cast<Fn>(
      reinterpret_cast<const Generic*>(api)[static_cast<std::size_t>(entry)]);
}

}  // namespace memarena::ort::abi
