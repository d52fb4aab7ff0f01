// A trainer's use of the installed core: reduce three ranks' arrays under the fixed-order and
// the exact contracts, and digest the result. The values are chosen so that the two contracts
// differ (fixed-order cancels 1e20 after 1 was absorbed into it; exact keeps the 1), so a
// package that linked the wrong code, or lost the FP flags, fails here.
#include <cstdio>
#include <fstream>

#include "core/digest/digest.h"
#include "core/exact/stacked_in_double.h"
#include "core/fold.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer OUT.f32\n");
    return 2;
  }
  constexpr std::size_t n = 2;
  // Stacked layout: slot r holds rank r's n values.
  const float stacked[3 * n] = {1.0f, 0.5f, 1e20f, 0.25f, -1e20f, 0.25f};
  float fixed[n], exact[n];
  rv::fold_stacked(stacked, 3, n, n, rv::Op::kSum, fixed);
  rv::exact_reduce_stacked_in_double(stacked, 3, n, n, rv::Op::kSum, exact);
  if (fixed[0] != 0.0f || exact[0] != 1.0f || fixed[1] != 1.0f || exact[1] != 1.0f) {
    std::fprintf(stderr, "consumer: wrong sums: fixed-order %g %g, exact %g %g\n", fixed[0],
                 fixed[1], exact[0], exact[1]);
    return 1;
  }
  std::ofstream(argv[1], std::ios::binary)
      .write(reinterpret_cast<const char*>(fixed), sizeof fixed);
  std::printf("%s  %s\n", rv::digest_floats(fixed, n).hex().c_str(), argv[1]);
  return 0;
}
