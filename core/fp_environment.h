// The process's floating-point state. The fixed-order contract needs round-to-nearest-even
// and subnormals kept; a library built with fast-math can set FTZ/DAZ for the whole process
// when it is loaded, so `info` reports this state and the tools refuse to run without it.
#pragma once

#include <string>

namespace rv {

struct FpEnvironment {
  bool flush_to_zero = false;       // MXCSR.FTZ: subnormal results become zero
  bool denormals_are_zero = false;  // MXCSR.DAZ: subnormal inputs read as zero
  std::string rounding;             // "nearest-even", "toward-zero", "upward", "downward"
  bool ieee() const { return !flush_to_zero && !denormals_are_zero && rounding == "nearest-even"; }
};

FpEnvironment read_fp_environment();

// Throws RuntimeFailure naming what is wrong when the state would break the contract.
void enforce_ieee_fp_environment();

}  // namespace rv
