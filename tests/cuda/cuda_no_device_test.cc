// The CUDA backend on a machine without a usable device: every entry point reports the
// runtime's reason or returns nullptr; nothing crashes. Skips where a device exists.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "memarena/cuda.h"

namespace memarena {
namespace {

class NoDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount(&reason_) > 0) GTEST_SKIP() << "a CUDA device is present";
  }
  std::string reason_;
};

TEST_F(NoDevice, DeviceCountGivesTheRuntimesReason) {
  EXPECT_FALSE(reason_.empty());
}

TEST_F(NoDevice, FactoriesThrowNamingTheDeviceAndTheReason) {
  for (auto make : {+[] { cuda::MakeDeviceArena(0); }, +[] { cuda::MakeDeviceMemorySource(0); },
                    +[] { cuda::MakeEventFence(0); }}) {
    try {
      make();
      FAIL() << "a factory succeeded without a device";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("device 0"), std::string::npos) << what;
      EXPECT_NE(what.find(reason_), std::string::npos) << what;
    }
  }
}

TEST_F(NoDevice, PluggableAbiReturnsNullAndIgnoresFrees) {
  EXPECT_EQ(memarena_cuda_malloc(4096, 0, nullptr), nullptr);
  EXPECT_EQ(memarena_cuda_malloc(4096, -1, nullptr), nullptr);
  EXPECT_EQ(memarena_cuda_malloc(4096, 1000, nullptr), nullptr);
  memarena_cuda_free(nullptr, 0, 0, nullptr);
  EXPECT_EQ(memarena_cuda_release_unused(0), 0u);
}

TEST(CudaStreams, HandlesKeepTheDefaultStreamApartFromNoStream) {
  EXPECT_NE(cuda::ToStreamHandle(nullptr), StreamHandle{0});
  EXPECT_NE(cuda::ToStreamHandle(nullptr),
            cuda::ToStreamHandle(reinterpret_cast<CUstream_st*>(0x2)));
}

}  // namespace
}  // namespace memarena
