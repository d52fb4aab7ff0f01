// reduce-verify digest: the digest of one reduced arena, from a case id, case options or
// raw per-rank input files. The first token of the line is the digest; --dump writes the
// reduced arena, whose `xxh128sum` is that digest.
#include <iostream>
#include <memory>
#include <optional>

#include "core/digest/digest.h"
#include "core/error.h"
#include "core/fp_environment.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/reference.h"
#include "verify/cli/commands.h"
#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"
#include "verify/common/output_file.h"
#include "verify/golden/case_matrix.h"
#include "verify/golden/golden_file.h"
#include "verify/golden/raw_inputs.h"

namespace rv {
namespace {

struct DigestOptions {
  std::vector<std::string> case_ids;
  CaseMatrix matrix;
  std::vector<std::string> inputs;
  std::string dump;
};

void digest_inputs(const DigestOptions& options) {
  if (options.matrix.ops.size() != 1) throw InputError("digest --inputs: give one --op");
  const auto op = parse_op(options.matrix.ops[0]);
  if (!op) throw InputError("digest --inputs: --op must be sum or mean");
  const auto arenas = read_raw_inputs(options.inputs);
  const bool exact = options.matrix.contract == "exact";
  const std::vector<float> reduced =
      expected_reduction(arenas, exact ? Contract::kExact : Contract::kFixedOrder, *op);
  const Digest digest = digest_floats(reduced.data(), reduced.size());
  if (!options.dump.empty()) {
    write_file_atomically(options.dump, reduced.data(), reduced.size() * sizeof(float));
  }
  std::cout << inputs_line(digest, options.inputs, *op, reduced.size(),
                           exact ? Contract::kExact : Contract::kFixedOrder)
            << "\n";
}

void digest_one_case(const CaseId& id, const std::string& dump) {
  if (id.contract == Contract::kLibrarySum) {
    throw InputError(
        "digest: contract library-sum has no portable digest; fixed-order and exact cases "
        "can be re-derived");
  }
  DigestStream stream;
  std::optional<OutputFile> out;
  if (!dump.empty()) out.emplace(dump);
  stream_reference_reduction(id, [&](const float* values, std::size_t count) {
    stream.update_floats(values, count);
    if (out) out->write(values, count * sizeof(float));
  });
  if (out) out->commit();
  std::cout << format_golden_line(stream.finish(), id) << "\n";
}

int run_digest(const DigestOptions& options) {
  enforce_ieee_fp_environment();
  const bool by_case = !options.case_ids.empty();
  const bool by_matrix = !options.matrix.worlds.empty() || !options.matrix.counts.empty();
  const bool by_inputs = !options.inputs.empty();
  if (by_case + by_matrix + by_inputs != 1) {
    throw InputError(
        "digest: give exactly one of --case ID, case options (--world, --count, …) "
        "or --inputs FILE...");
  }
  if (!options.dump.empty()) check_output_path(options.dump, "--dump");
  if (by_inputs) {
    digest_inputs(options);
    return kExitVerified;
  }
  std::vector<CaseId> cases;
  if (by_case) {
    for (const std::string& text : options.case_ids) cases.push_back(parse_case_id(text));
  } else {
    cases = expand_case_matrix(options.matrix);
  }
  if (!options.dump.empty() && cases.size() != 1) {
    throw InputError("digest: --dump needs exactly one case, not " + std::to_string(cases.size()));
  }
  for (const CaseId& id : cases) digest_one_case(id, options.dump);
  return kExitVerified;
}

}  // namespace

void setup_digest(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<DigestOptions>();
  options->matrix.ops = {"sum"};  // one digest unless asked for both
  CLI::App* cmd = app.add_subcommand(
      "digest",
      "Print the digest of a case (--case ID or case options; prints a golden line) or of raw "
      "per-rank files (--inputs r0.f32 r1.f32 ...) under the fixed-order or the exact "
      "contract (--contract). The first token of the line is the digest.");
  cmd->add_option(
      "--case", options->case_ids,
      "a case id, e.g. contract=fixed-order,op=mean,w=4,n=1000003,dist=wide,seed=7,gen=1");
  add_case_matrix_options(*cmd, options->matrix);
  // The matrix's own help speaks for golden, whose default is both ops; digest's is sum.
  cmd->get_option("--op")->description("ops: sum, mean (default: sum)");
  cmd->add_option("--inputs", options->inputs,
                  "raw little-endian binary32 files, file r = rank r, all the same length");
  cmd->add_option("--dump", options->dump, "write the reduced arena (raw binary32) to FILE");
  cmd->callback([options, &exit_code] { exit_code = run_digest(*options); });
}

}  // namespace rv
