// reduce-verify info: the box fingerprint, one `key: value` line each.
#include <iostream>
#include <memory>

#include "verify/cli/commands.h"
#include "verify/common/exit_codes.h"
#include "verify/golden/fingerprint.h"
#if defined(RV_HAVE_RUN)
#include "verify/live/transport_factory.h"
#endif

namespace rv {

void setup_info(CLI::App& app, int& exit_code) {
  CLI::App* cmd =
      app.add_subcommand("info",
                         "Print this box's fingerprint: tool and commit, compiler and flags, CPU, "
                         "floating-point state, library versions.");
  cmd->callback([&exit_code] {
    Fingerprint fingerprint = host_fingerprint();
#if defined(RV_HAVE_RUN)
    for (auto& [key, value] : transport_facts()) fingerprint.add(key, value);
#endif
    for (const auto& [key, value] : fingerprint.fields()) {
      std::cout << key << ": " << value << "\n";
    }
    exit_code = kExitVerified;
  });
}

}  // namespace rv
