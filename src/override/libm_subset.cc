// The C names of libm_subset.h's functions, linked into libmemarena_malloc.so only (local
// there: the version script exports none of them), so the library needs no libm.so.
#include "override/libm_subset.h"

namespace libm = memarena::dropin::libm;

extern "C" {
double ceil(double x) { return libm::Ceil(x); }
long long llround(double x) { return libm::LlRound(x); }
double expm1(double x) { return libm::ExpM1(x); }
}
