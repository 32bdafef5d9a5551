// A factoring program, one thread: Pollard's rho on 80-100 bit composites, in a bignum
// arithmetic where every operation returns a freshly allocated number and the caller frees
// its operands as soon as they are dead (the style of the multi-precision libraries that
// factoring programs of the cfrac kind carry). Numbers are 16-bit digit arrays behind an
// 8-byte header, 8-48 B each, so the program is a tight loop of small, very short-lived
// allocations whose sizes follow the arithmetic. The remainder is taken by shift-and-
// subtract, one new number per bit, which is what makes allocation the bulk of the work.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "workload.h"

namespace {

// A non-negative number: `len` base-2^16 digits, least significant first, no leading zero.
struct Num {
  std::uint32_t len;
  std::uint32_t spare;  // keeps the digits 8-byte aligned after the header, as a real one would
  std::uint16_t digit[];
};

Num* NewNum(std::uint32_t len) {
  auto* n = static_cast<Num*>(std::malloc(sizeof(Num) + len * sizeof(std::uint16_t)));
  n->len = len;
  n->spare = 0;
  return n;
}

Num* Trim(Num* n) {
  while (n->len > 0 && n->digit[n->len - 1] == 0) --n->len;
  return n;
}

Num* FromU64(std::uint64_t v) {
  Num* n = NewNum(4);
  for (int i = 0; i < 4; ++i) n->digit[i] = static_cast<std::uint16_t>(v >> (16 * i));
  return Trim(n);
}

int Compare(const Num* a, const Num* b) {
  if (a->len != b->len) return a->len < b->len ? -1 : 1;
  for (std::uint32_t i = a->len; i-- > 0;) {
    if (a->digit[i] != b->digit[i]) return a->digit[i] < b->digit[i] ? -1 : 1;
  }
  return 0;
}

Num* Add(const Num* a, const Num* b) {
  if (a->len < b->len) return Add(b, a);
  Num* r = NewNum(a->len + 1);
  std::uint32_t carry = 0;
  for (std::uint32_t i = 0; i < a->len; ++i) {
    carry += a->digit[i] + (i < b->len ? b->digit[i] : 0u);
    r->digit[i] = static_cast<std::uint16_t>(carry);
    carry >>= 16;
  }
  r->digit[a->len] = static_cast<std::uint16_t>(carry);
  return Trim(r);
}

// a - b for a >= b.
Num* Sub(const Num* a, const Num* b) {
  Num* r = NewNum(a->len);
  std::int32_t borrow = 0;
  for (std::uint32_t i = 0; i < a->len; ++i) {
    std::int32_t d = a->digit[i] - borrow - (i < b->len ? b->digit[i] : 0);
    borrow = d < 0 ? 1 : 0;
    r->digit[i] = static_cast<std::uint16_t>(d + (borrow << 16));
  }
  return Trim(r);
}

Num* Mul(const Num* a, const Num* b) {
  Num* r = NewNum(a->len + b->len);
  for (std::uint32_t i = 0; i < r->len; ++i) r->digit[i] = 0;
  for (std::uint32_t i = 0; i < a->len; ++i) {
    std::uint32_t carry = 0;
    for (std::uint32_t j = 0; j < b->len; ++j) {
      carry += static_cast<std::uint32_t>(a->digit[i]) * b->digit[j] + r->digit[i + j];
      r->digit[i + j] = static_cast<std::uint16_t>(carry);
      carry >>= 16;
    }
    r->digit[i + b->len] = static_cast<std::uint16_t>(carry);
  }
  return Trim(r);
}

// 2a + bit.
Num* ShiftInBit(const Num* a, unsigned bit) {
  Num* r = NewNum(a->len + 1);
  std::uint32_t carry = bit;
  for (std::uint32_t i = 0; i < a->len; ++i) {
    carry += static_cast<std::uint32_t>(a->digit[i]) << 1;
    r->digit[i] = static_cast<std::uint16_t>(carry);
    carry >>= 16;
  }
  r->digit[a->len] = static_cast<std::uint16_t>(carry);
  return Trim(r);
}

// a mod m (m > 0) by long division in base 2, a new number per bit.
Num* Mod(const Num* a, const Num* m) {
  Num* r = NewNum(0);
  for (std::uint32_t i = a->len * 16; i-- > 0;) {
    Num* shifted = ShiftInBit(r, (a->digit[i / 16] >> (i % 16)) & 1u);
    std::free(r);
    if (Compare(shifted, m) >= 0) {
      r = Sub(shifted, m);
      std::free(shifted);
    } else {
      r = shifted;
    }
  }
  return r;
}

// Consumes a and b.
Num* Gcd(Num* a, Num* b) {
  while (b->len != 0) {
    Num* r = Mod(a, b);
    std::free(a);
    a = b;
    b = r;
  }
  std::free(b);
  return a;
}

// x^2 + c mod n; consumes x.
Num* Step(Num* x, const Num* c, const Num* n) {
  Num* square = Mul(x, x);
  std::free(x);
  Num* sum = Add(square, c);
  std::free(square);
  Num* r = Mod(sum, n);
  std::free(sum);
  return r;
}

Num* AbsDiff(const Num* a, const Num* b) { return Compare(a, b) >= 0 ? Sub(a, b) : Sub(b, a); }

Num* Copy(const Num* a) {
  Num* r = NewNum(a->len);
  for (std::uint32_t i = 0; i < a->len; ++i) r->digit[i] = a->digit[i];
  return r;
}

bool IsOne(const Num* a) { return a->len == 1 && a->digit[0] == 1; }

// A factor of n found by Floyd's cycle search with the differences multiplied together and
// one gcd every kBatch steps; a new constant c when a batch collapses to n.
Num* Rho(const Num* n, std::uint64_t& steps) {
  constexpr int kBatch = 16;
  for (std::uint64_t c_value = 1;; ++c_value) {
    Num* c = FromU64(c_value);
    Num* x = FromU64(2);
    Num* y = FromU64(2);
    Num* product = FromU64(1);
    Num* found = nullptr;
    while (found == nullptr) {
      for (int k = 0; k < kBatch; ++k) {
        x = Step(x, c, n);
        y = Step(Step(y, c, n), c, n);
        Num* diff = AbsDiff(x, y);
        Num* wide = Mul(product, diff);
        std::free(product);
        std::free(diff);
        product = Mod(wide, n);
        std::free(wide);
        ++steps;
      }
      Num* d = Gcd(Copy(product), Copy(n));
      if (IsOne(d)) {
        std::free(d);
      } else {
        found = d;
      }
    }
    std::free(c);
    std::free(x);
    std::free(y);
    std::free(product);
    if (Compare(found, n) != 0) return found;
    std::free(found);  // the batch passed every factor at once: try another polynomial
  }
}

std::uint64_t Digits64(const Num* a) {
  std::uint64_t v = 0;
  for (std::uint32_t i = a->len < 4 ? a->len : 4; i-- > 0;) v = (v << 16) | a->digit[i];
  return v;
}

bool IsPrime(std::uint64_t v) {
  if (v < 2) return false;
  for (std::uint64_t d = 2; d * d <= v; ++d) {
    if (v % d == 0) return false;
  }
  return true;
}

// An odd prime of about `bits` bits.
std::uint64_t RandomPrime(workload::Rng& rng, int bits) {
  std::uint64_t v = (rng.Next() >> (64 - bits)) | (std::uint64_t{1} << (bits - 1)) | 1;
  while (!IsPrime(v)) v += 2;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = workload::Scale(argc, argv);
  const std::size_t numbers = workload::Scaled(40, scale);
  workload::Rng rng(31337);
  std::uint64_t checksum = 0;
  std::uint64_t steps = 0;
  for (std::size_t i = 0; i < numbers; ++i) {
    // n = p * q * r: a small prime factor for rho to find (18-22 bits, so several hundred
    // steps), behind two 30-32 bit prime cofactors that make the numbers 80-86 bits wide.
    const std::uint64_t p = RandomPrime(rng, 18 + static_cast<int>(rng.Next() % 5));
    Num* a = FromU64(p);
    Num* b = FromU64(RandomPrime(rng, 32));
    Num* ab = Mul(a, b);
    Num* c = FromU64(RandomPrime(rng, 30));
    Num* n = Mul(ab, c);
    std::free(a);
    std::free(b);
    std::free(ab);
    std::free(c);
    Num* factor = Rho(n, steps);
    Num* rest = Mod(n, factor);
    if (rest->len != 0) {
      std::fprintf(stderr, "factoring: rho returned a non-divisor\n");
      return 1;
    }
    std::free(rest);
    checksum = checksum * 31 + Digits64(factor) + factor->len;
    std::free(factor);
    std::free(n);
  }
  std::printf("factoring: %zu numbers, %llu steps, checksum %llu\n", numbers,
              static_cast<unsigned long long>(steps), static_cast<unsigned long long>(checksum));
  return 0;
}
