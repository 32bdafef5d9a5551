// The libm functions the code inside libmemarena_malloc.so calls (fmt's float formatting:
// ceil; the heap profile: llround; the heap sample's weight: expm1), so that the library does
// not load libm.so (about 300 KiB resident in every process, most of it touched by its ifunc
// resolvers at load). libm_subset.cc gives them their C names inside the .so only; tests
// compare them with libm's.
#pragma once

#include <climits>
#include <cstdint>
#include <cstring>

namespace memarena::dropin::libm {

// 2^k for k in [-1022, 1023], built from its bits.
inline double PowerOfTwo(int k) noexcept {
  const std::uint64_t bits = static_cast<std::uint64_t>(1023 + k) << 52;
  double out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// ceil: the least whole number not below x; -0.0 stays -0.0 (and -0.5 gives -0.0).
inline double Ceil(double x) noexcept {
  if (!(__builtin_fabs(x) < 0x1p52)) return x;  // NaN, infinities, values already whole
  double whole = static_cast<double>(static_cast<long long>(x));  // toward zero, exact
  if (whole < x) whole += 1.0;
  return __builtin_copysign(whole, x);
}

// llround: the nearest whole number, halves away from zero; LLONG_MIN when it does not fit
// (what x86-64 glibc returns after raising FE_INVALID).
inline long long LlRound(double x) noexcept {
  if (!(x >= -0x1p63 && x < 0x1p63)) return LLONG_MIN;
  const long long whole = static_cast<long long>(x);
  const double rest = x - static_cast<double>(whole);  // exact: both are near x
  if (rest >= 0.5) return whole + 1;
  if (rest <= -0.5) return whole - 1;
  return whole;
}

// e^r - 1 for |r| <= ln(2)/2 by its Taylor series; the 15 terms leave an error below 2^-56
// relative to the result.
inline double ExpM1Near0(double r) noexcept {
  double sum = 1.0;
  for (int n = 15; n >= 2; --n) sum = 1.0 + sum * r / n;
  return r * sum;
}

// expm1: e^x - 1, accurate to a few ulps also where it is close to 0 (where exp(x) - 1 would
// cancel). x = k ln2 + r with |r| <= ln2/2, then e^x - 1 = 2^k (e^r - 1) + (2^k - 1).
inline double ExpM1(double x) noexcept {
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // ln2's high 32 bits (fdlibm's split)
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kInvLn2 = 1.44269504088896338700e+00;
  if (x != x) return x;
  if (x > 709.782712893383973096) return __builtin_inf();  // e^x overflows
  if (x < -38.0) return -1.0;                                // e^x < 2^-54: rounds to -1
  if (__builtin_fabs(x) <= 0.34657359027997264) return ExpM1Near0(x);
  const int k = static_cast<int>(x * kInvLn2 + (x < 0 ? -0.5 : 0.5));
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  const double em = ExpM1Near0(r);
  if (k == 1024) return (1.0 + em) * PowerOfTwo(1023) * 2.0;
  if (k > 56) return (1.0 + em) * PowerOfTwo(k);            // the - 1 is below half an ulp
  if (k < -1) return (1.0 + em) * PowerOfTwo(k) - 1.0;      // |result| > 0.6: no cancellation
  return (em + (1.0 - PowerOfTwo(-k))) * PowerOfTwo(k);      // 2^k (e^r - 1 + 1 - 2^-k)
}

}  // namespace memarena::dropin::libm
