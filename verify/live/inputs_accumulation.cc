#include "verify/live/inputs_accumulation.h"

#include "core/error.h"
#include "core/exact/exact_accumulator.h"
#include "verify/common/file_io.h"

namespace rv {

std::vector<float> reduce_inputs_accumulated(Transport& transport,
                                             const std::vector<std::string>& files,
                                             std::uint32_t rank, std::uint32_t world, Op op) {
  if (transport.name() == "nccl") {
    throw InputError("run --inputs with more files (" + std::to_string(files.size()) +
                     ") than ranks (" + std::to_string(world) +
                     ") accumulates on the host: use --transport gloo");
  }
  const std::uint64_t count = regular_file_size(files[0]) / sizeof(float);
  ExactAccumulator accumulator(count);
  for (std::size_t f = rank; f < files.size(); f += world) {
    const std::vector<float> values = read_f32_file(files[f], count);
    if (values.size() != count) {
      throw InputError(files[f] + ": " + std::to_string(values.size()) + " values, " + files[0] +
                       " has " + std::to_string(count));
    }
    accumulator.add(values.data(), 0, count);
    accumulator.end_micro_batch();
  }
  const std::uint64_t mean_over = op == Op::kMean ? files.size() : 0;
  std::vector<std::int64_t> words(accumulator.agreement_size());
  accumulator.agreement_words(0, op, mean_over, words.data());
  // The header alone first: its size is every rank's, and it carries the lengths.
  transport.all_reduce_int64(words.data(), kAccumulatorHeaderWords, IntReduction::kMax);
  const HeaderDisagreement d = find_header_disagreement(words.data());
  if (d.field != AccumulatorField::kFields) {
    throw InputError(std::string("run --inputs: the ranks disagree on the ") +
                     accumulator_field_name(d.field) + " (from " + std::to_string(d.smallest) +
                     " to " + std::to_string(d.largest) + ")");
  }
  transport.all_reduce_int64_counts_agreed(words.data() + kAccumulatorHeaderWords,
                                           words.size() - kAccumulatorHeaderWords,
                                           IntReduction::kMax);
  const AccumulatorPlan plan = accumulator.plan(words.data(), world);
  std::vector<std::int64_t> digits(plan.words);
  accumulator.export_digits(plan, digits.data());
  transport.all_reduce_int64_counts_agreed(digits.data(), digits.size(), IntReduction::kSum);
  std::vector<float> out(count);
  finish_accumulated(plan, digits.data(), op, mean_over, count, out.data());
  return out;
}

}  // namespace rv
