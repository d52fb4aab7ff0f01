// reduce-verify digest: the digest of one reduced arena, from a case id, case options or
// raw per-rank input files. The first token of the line is the digest; --dump writes the
// reduced arena, whose `xxh128sum` is that digest.
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>

#include "core/digest/digest.h"
#include "core/dtype_arrays.h"
#include "core/error.h"
#include "core/fp_environment.h"
#include "core/oracle/case_reduction.h"
#include "core/oracle/emulated_world.h"
#include "core/oracle/reference.h"
#include "verify/cli/commands.h"
#include "verify/common/exit_codes.h"
#include "verify/common/file_io.h"
#include "verify/common/output_file.h"
#include "verify/common/raw_inputs.h"
#include "verify/golden/case_matrix.h"
#include "verify/golden/golden_file.h"

namespace rv {
namespace {

struct DigestOptions {
  std::vector<std::string> case_ids;
  CaseMatrix matrix;
  std::vector<std::string> inputs;
  std::string dump;
};

// The reduce-scatter of raw inputs (docs/DESIGN.md §2.6): EmulatedWorld's owner dataflow
// without the all-gather, every rank's shard of FSDP's padded plan, concatenated in rank
// order, so the digest covers every shard. The contract makes that the all-reduce's arena;
// a shard that is not is this tool's bug, named.
std::vector<float> reduce_scattered(const std::vector<std::vector<float>>& arenas,
                                    Contract contract, Op op, DType dtype) {
  const std::vector<float> all_reduced = expected_reduction(arenas, contract, op, dtype);
  const EmulatedWorld world(static_cast<std::uint32_t>(arenas.size()));
  const auto shards = contract == Contract::kExact
                          ? world.reduce_scatter_exact(arenas, op, {}, dtype)
                          : world.reduce_scatter(arenas, op, {}, dtype);
  std::vector<float> all;
  for (const std::vector<float>& shard : shards) all.insert(all.end(), shard.begin(), shard.end());
  if (all.size() != all_reduced.size() ||
      std::memcmp(all.data(), all_reduced.data(), all.size() * sizeof(float)) != 0) {
    throw InternalError("digest --coll reduce-scatter: the shards differ from the all-reduce");
  }
  return all;
}

void digest_inputs(const DigestOptions& options) {
  if (options.matrix.ops.size() != 1) throw InputError("digest --inputs: give one --op");
  const auto op = parse_op(options.matrix.ops[0]);
  if (!op) throw InputError("digest --inputs: --op must be sum or mean");
  const std::vector<DType> dtypes = parse_dtype_list(options.matrix.dtypes);
  if (dtypes.size() != 1) throw InputError("digest --inputs: give one --dtype");
  const DType dtype = dtypes[0];
  const auto arenas = read_raw_inputs(options.inputs, dtype);
  const Contract contract = *parse_contract(options.matrix.contract);  // CLI-checked
  const std::vector<float> reduced =
      options.matrix.coll == "reduce-scatter"
          ? reduce_scattered(arenas, contract, *op, dtype)
          : expected_reduction(arenas, contract, *op, dtype);
  const Digest digest = digest_values(reduced.data(), reduced.size(), dtype);
  if (!options.dump.empty()) {
    const std::vector<unsigned char> bytes = dtype_bytes_of(reduced.data(), reduced.size(), dtype);
    write_file_atomically(options.dump, bytes.data(), bytes.size());
  }
  std::cout << inputs_line(digest, options.inputs, *op, reduced.size(), contract, dtype) << "\n";
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
    stream.update_values(values, count, id.dtype);
    if (out) {
      const std::vector<unsigned char> bytes = dtype_bytes_of(values, count, id.dtype);
      out->write(bytes.data(), bytes.size());
    }
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
    if (options.matrix.dtypes != std::vector<std::string>{"f32"}) {
      throw InputError("digest --case: the case id names its dtype (dtype=bf16|f16), not --dtype");
    }
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
      "per-rank files (--inputs r0.f32 r1.f32 ..., values of --dtype) under the fixed-order "
      "or the exact contract (--contract). The first token of the line is the digest, the "
      "XXH3-128 of the reduced values' own bytes (2 per element for bf16/f16).");
  cmd->add_option(
      "--case", options->case_ids,
      "a case id, e.g. contract=fixed-order,op=mean,w=4,n=1000003,dist=wide,seed=7,gen=1");
  add_case_matrix_options(*cmd, options->matrix);
  // The matrix's own help speaks for golden, whose default is both ops; digest's is sum.
  cmd->get_option("--op")->description("ops: sum, mean (default: sum)");
  cmd->add_option("--inputs", options->inputs,
                  "raw little-endian files of --dtype (default binary32), file r = rank r, all "
                  "the same length");
  cmd->add_option("--dump", options->dump,
                  "write the reduced arena (raw values of its dtype) to FILE; its xxh128sum is "
                  "the digest");
  cmd->callback([options, &exit_code] { exit_code = run_digest(*options); });
}

}  // namespace rv
