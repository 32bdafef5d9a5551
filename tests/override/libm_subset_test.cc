// The libm functions libmemarena_malloc.so carries itself (src/override/libm_subset.h)
// against libm's own, on their edge cases and on a spread of random arguments.
#include "override/libm_subset.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

namespace memarena::dropin::libm {
namespace {

std::uint64_t Bits(double x) {
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(LibmSubset, CeilIsLibmsToTheBit) {
  std::mt19937_64 rng(12);
  std::vector<double> xs = {0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 0x1p52, -0x1p52,
                            0x1p52 - 0.5, -(0x1p52 - 0.5), 0x1p53, 1e300, -1e300, kInf, -kInf,
                            std::numeric_limits<double>::denorm_min(), -4.9e-324, 2.9999999999999996};
  for (int i = 0; i < 200000; ++i) {
    xs.push_back(std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), i % 70 - 10));
  }
  for (double x : xs) EXPECT_EQ(Bits(Ceil(x)), Bits(std::ceil(x))) << x;
  EXPECT_TRUE(std::isnan(Ceil(kNaN)));
}

TEST(LibmSubset, LlroundIsLibms) {
  std::mt19937_64 rng(34);
  std::vector<double> xs = {0.0, -0.0, 0.5, -0.5, 0.49999999999999994, -0.49999999999999994,
                            1.5, -1.5, 2.5, -2.5, 0x1p52 + 1, -0x1p62, 0x1p63 - 1024, -0x1p63};
  for (int i = 0; i < 200000; ++i) {
    xs.push_back(std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), i % 64));
  }
  for (double x : xs) EXPECT_EQ(LlRound(x), std::llround(x)) << x;
  // Out of range: what x86-64 glibc returns.
  for (double x : {0x1p63, -0x1p64, 1e300, kInf, -kInf, kNaN}) EXPECT_EQ(LlRound(x), LLONG_MIN);
}

TEST(LibmSubset, Expm1IsWithinTwoUlpsOfLibms) {
  std::mt19937_64 rng(56);
  std::vector<double> xs = {0.0, -0.0, 1e-300, -1e-300, 1e-20, -1e-20, 0.3, -0.3, 0.34657359,
                            0.3466, -0.3466, 0.7, 1.0, -1.0, 2.0, -37.9, -38.5, -745.0, 40.0,
                            700.0, 709.78, 709.7827128933839, -1e300};
  for (int i = 0; i < 200000; ++i) {
    xs.push_back(std::uniform_real_distribution<double>(-40, 710)(rng));
    xs.push_back(std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), -(i % 60)));
  }
  for (double x : xs) {
    const double want = std::expm1(x);
    const double got = ExpM1(x);
    if (got == want) continue;  // also the overflows to infinity
    const double ulp = std::nextafter(std::fabs(want), kInf) - std::fabs(want);
    EXPECT_LE(std::fabs(got - want), 2 * ulp) << "x " << x << " got " << got << " want " << want;
  }
  EXPECT_EQ(ExpM1(710.0), kInf);
  EXPECT_EQ(ExpM1(-kInf), -1.0);
  EXPECT_EQ(ExpM1(kInf), kInf);
  EXPECT_TRUE(std::isnan(ExpM1(kNaN)));
  EXPECT_EQ(Bits(ExpM1(-0.0)), Bits(-0.0));
}

}  // namespace
}  // namespace memarena::dropin::libm
