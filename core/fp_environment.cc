#include "core/fp_environment.h"

#include <cfenv>

#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace rv {

FpEnvironment read_fp_environment() {
  FpEnvironment env;
#if defined(__x86_64__) || defined(__i386__)
  const unsigned csr = _mm_getcsr();
  env.flush_to_zero = (csr & (1u << 15)) != 0;
  env.denormals_are_zero = (csr & (1u << 6)) != 0;
#endif
  switch (std::fegetround()) {
    case FE_TONEAREST:
      env.rounding = "nearest-even";
      break;
    case FE_TOWARDZERO:
      env.rounding = "toward-zero";
      break;
    case FE_UPWARD:
      env.rounding = "upward";
      break;
    case FE_DOWNWARD:
      env.rounding = "downward";
      break;
    default:
      env.rounding = "unknown";
  }
  return env;
}

void enforce_ieee_fp_environment() {
  const FpEnvironment env = read_fp_environment();
  if (env.ieee()) return;
  throw RuntimeFailure(std::string("the process's floating-point state breaks the contract: ") +
                       "FTZ=" + (env.flush_to_zero ? "on" : "off") + " DAZ=" +
                       (env.denormals_are_zero ? "on" : "off") + " rounding=" + env.rounding +
                       " (needed: FTZ off, DAZ off, nearest-even; was something built with "
                       "-ffast-math loaded?)");
}

}  // namespace rv
