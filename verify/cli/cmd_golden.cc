// reduce-verify golden: a case matrix → golden lines, each proven by EmulatedWorld under
// --orders shuffled delivery orders against the reference fold.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fp_environment.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/emulated_world.h"
#include "core/oracle/reference.h"
#include "verify/cli/commands.h"
#include "verify/cli/parallel.h"
#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"
#include "verify/common/output_file.h"
#include "verify/common/progress.h"
#include "verify/golden/accuracy.h"
#include "verify/golden/case_matrix.h"
#include "verify/golden/fingerprint.h"
#include "verify/golden/golden_file.h"
#include "verify/golden/golden_maker.h"

namespace rv {
namespace {

struct GoldenOptions {
  CaseMatrix matrix;
  std::vector<std::string> matrix_specs;
  std::uint32_t orders = 8;
  std::string output;
  std::string accuracy;  // a report of every fixed-order case's error against exact
  unsigned threads = 0;
};

// Every fixed-order case's error against the exact contract, as a report `compare` reads.
void write_accuracy_report(const std::vector<CaseId>& cases, const std::vector<Digest>& digests,
                           const GoldenOptions& options) {
  std::vector<std::optional<ErrorVsExact>> errors(cases.size());
  {
    Progress progress("accuracy", cases.size());
    parallel_for(cases.size(), options.threads, [&](std::size_t i) {
      if (cases[i].contract == Contract::kFixedOrder) {
        const std::vector<float> reduced =
            reference_fixed_order(generate_case_arenas(cases[i]), cases[i].op, cases[i].dtype);
        errors[i] = error_against(cases[i], reduced, Contract::kExact);
      }
      progress.advance();
    });
  }
  nlohmann::json results = nlohmann::json::array();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!errors[i]) continue;
    results.push_back({{"case", format_case_id(cases[i])},
                       {"contract", std::string(to_string(cases[i].contract))},
                       {"w", cases[i].world},
                       {"verdict", "OK"},
                       {"digest", digests[i].hex()},
                       {"vs_exact", to_json(*errors[i])}});
  }
  nlohmann::json fingerprint = nlohmann::json::object();
  const Fingerprint host = host_fingerprint();
  for (const auto& [key, value] : host.fields()) fingerprint[key] = value;
  const nlohmann::json report = {{"format", "reduce-verify golden accuracy 1"},
                                 {"fingerprint", fingerprint},
                                 {"results", results}};
  const std::string text = report.dump(1) + "\n";
  write_file_atomically(options.accuracy, text.data(), text.size());
  std::cerr << "golden: wrote the error against exact of " << results.size() << " cases to "
            << options.accuracy << "\n";
}

int run_golden(const GoldenOptions& options) {
  enforce_ieee_fp_environment();
  std::vector<CaseMatrix> matrices;
  if (!options.matrix.worlds.empty() || !options.matrix.counts.empty()) {
    matrices.push_back(options.matrix);
  }
  for (const std::string& spec : options.matrix_specs) matrices.push_back(parse_case_matrix(spec));
  if (matrices.empty()) throw InputError("golden: give --world and --count, or --matrix SPEC");
  // Outputs are checked before the (long) proof, not found unwritable after it.
  if (!options.output.empty() && options.output != "-") check_output_path(options.output, "-o");
  if (!options.accuracy.empty()) check_output_path(options.accuracy, "--accuracy");

  std::vector<CaseId> cases;
  for (const CaseMatrix& matrix : matrices) {
    const std::vector<CaseId> more = expand_case_matrix(matrix);
    cases.insert(cases.end(), more.begin(), more.end());
  }

  std::vector<Digest> digests(cases.size());
  {
    Progress progress("golden", cases.size());
    // Large cases hold W × N floats twice; one worker per core bounds that to two at once.
    parallel_for(cases.size(), options.threads, [&](std::size_t i) {
      digests[i] = make_golden_digest(cases[i], options.orders);
      progress.advance();
    });
  }

  std::string contracts;
  for (const CaseMatrix& matrix : matrices) {
    if (contracts.find(matrix.contract) == std::string::npos) {
      contracts += (contracts.empty() ? "" : ", ") + matrix.contract;
    }
  }
  const bool exact_only = contracts == "exact";
  std::ostringstream text;
  text << "# reduce-verify golden digests: contract " << contracts << ", XXH3-128 (seed 0) of the\n"
       << "# reduced arena as little-endian binary32 (what xxh128sum prints for its bytes).\n";
  if (std::any_of(cases.begin(), cases.end(), [](const CaseId& c) { return c.dtype != DType::kF32; })) {
    text << "# bf16 and f16 cases (dtype= in the id): of their 2-byte values.\n";
  }
  text
       << "# made by: " << tool_identity() << "\n";
  if (exact_only) {
    text << "# proof: EmulatedWorld's integer dataflow agreed bit for bit with the straight exact "
            "reference under "
         << options.orders
         << " delivery orders per case (the ranks permuted in every other order)\n";
  } else {
    text << "# proof: EmulatedWorld agreed bit for bit with the reference fold under "
         << options.orders << " delivery orders per case\n";
  }
  for (const CaseMatrix& matrix : matrices) {
    text << "# matrix: " << format_case_matrix(matrix) << "\n";
  }
  text << "# regenerate: reduce-verify golden --orders " << options.orders;
  for (const CaseMatrix& matrix : matrices)
    text << " --matrix '" << format_case_matrix(matrix) << "'";
  text << " -o FILE\n";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    text << format_golden_line(digests[i], cases[i]) << "\n";
  }
  if (!options.accuracy.empty()) write_accuracy_report(cases, digests, options);
  const std::string bytes = text.str();
  if (options.output.empty() || options.output == "-") {
    std::cout << bytes;
  } else {
    write_file_atomically(options.output, bytes.data(), bytes.size());
    std::cerr << "golden: wrote " << cases.size() << " cases to " << options.output << "\n";
  }
  return kExitVerified;
}

}  // namespace

void setup_golden(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<GoldenOptions>();
  CLI::App* cmd = app.add_subcommand(
      "golden",
      "Compute golden digests for a case matrix (--contract fixed-order or exact). Each case "
      "is reduced by EmulatedWorld under --orders shuffled delivery orders (exact: and with "
      "the ranks permuted) and by the straight reference; any disagreement aborts.");
  add_case_matrix_options(*cmd, options->matrix);
  cmd->add_option("--matrix", options->matrix_specs,
                  "a whole matrix in one argument, repeatable: "
                  "'w=1,2;n=0,1000;dist=all;seed=1,2;op=sum,mean'");
  cmd->add_option("--orders", options->orders, "delivery orders tried per case (default 8)")
      ->check(CLI::Range(1u, 1000u));
  cmd->add_option("-o,--output", options->output, "write the golden file here (default stdout)");
  cmd->add_option("--threads", options->threads, "worker threads (default: one per core)");
  cmd->add_option("--accuracy", options->accuracy,
                  "also write every fixed-order case's error against the exact contract "
                  "(differing elements, max and mean ulp) to this JSON file (`compare` shows it)");
  cmd->callback([options, &exit_code] { exit_code = run_golden(*options); });
}

}  // namespace rv
