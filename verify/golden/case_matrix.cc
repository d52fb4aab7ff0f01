#include "verify/golden/case_matrix.h"

#include <limits>
#include <memory>
#include <sstream>

#include "core/error.h"

namespace rv {
namespace {
std::vector<std::string> parse_words(const std::string& list);
}  // namespace

void add_dtype_option(CLI::App& app, std::vector<std::string>& dtypes,
                      const std::string& description) {
  // One argument per --dtype, split here: a vector option would also swallow the positional
  // arguments after it (`check --dtype bf16 FILE...`). Repeating the flag appends.
  auto replaced = std::make_shared<bool>(false);  // the first --dtype replaces the default
  app.add_option_function<std::string>(
         "--dtype",
         [&dtypes, replaced](const std::string& list) {
           if (!*replaced) dtypes.clear();
           *replaced = true;
           for (const std::string& name : parse_words(list)) {
             if (!parse_dtype(name)) {
               throw CLI::ValidationError("--dtype", "'" + name + "' is not f32, bf16 or f16");
             }
             dtypes.push_back(name);
           }
         },
         description)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("LIST");
}

void add_coll_option(CLI::App& app, std::string& coll) {
  app.add_option("--coll", coll,
                 "the collective: all-reduce (default) or reduce-scatter (rank p keeps shard p "
                 "of FSDP's padded plan; docs/DESIGN.md §2.6)")
      ->check(CLI::IsMember({"all-reduce", "reduce-scatter"}));
}

void add_case_matrix_options(CLI::App& app, CaseMatrix& matrix) {
  auto* group = app.add_option_group("case matrix", "the cross product of these lists");
  group->add_option("--contract", matrix.contract, "fixed-order or exact (default fixed-order)")
      ->check(CLI::IsMember({"fixed-order", "exact"}));
  add_coll_option(*group, matrix.coll);
  group->add_option("--op", matrix.ops, "ops: sum, mean (default: both)")
      ->delimiter(',')
      ->check(CLI::IsMember({"sum", "mean"}));
  group->add_option("-w,--world", matrix.worlds, "world sizes W, e.g. 2,3,8")
      ->delimiter(',')
      ->check(CLI::Range(1u, kMaxWorld));
  group->add_option("-n,--count", matrix.counts, "elements per rank N, e.g. 0,1,1000003")
      ->delimiter(',')
      ->check(CLI::Range(std::uint64_t{0}, kMaxCount));
  group
      ->add_option("--dist", matrix.dists,
                   "distributions: normal, wide, cancel, exact, special or all (default: all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"all", "normal", "wide", "cancel", "exact", "special"}));
  group->add_option("--seed", matrix.seeds, "seeds (default: 1)")->delimiter(',');
  group->add_option("--gen", matrix.gen, "generator version (default: the latest)")
      ->check(CLI::Range(1u, kLatestGenerator));
  add_dtype_option(*group, matrix.dtypes,
                   "element types: f32, bf16, f16 (default: f32); --inputs files hold raw "
                   "little-endian values of this one dtype");
}

namespace {

template <typename T>
std::vector<T> parse_numbers(const std::string& key, const std::string& list) {
  std::vector<T> values;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      if (item.empty() || item[0] == '-' || item[0] == '+') throw std::invalid_argument(item);
      value = std::stoull(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || used == 0 || value > std::numeric_limits<T>::max()) {
      throw InputError("case matrix: key '" + key + "': '" + item + "' is not a number");
    }
    values.push_back(static_cast<T>(value));
  }
  if (values.empty()) throw InputError("case matrix: key '" + key + "' has no values");
  return values;
}

std::vector<std::string> parse_words(const std::string& list) {
  std::vector<std::string> words;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) words.push_back(item);
  return words;
}

template <typename T>
std::string join(const std::vector<T>& values) {
  std::ostringstream out;
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
  return out.str();
}

}  // namespace

CaseMatrix parse_case_matrix(const std::string& spec) {
  CaseMatrix matrix;
  bool have_w = false;
  bool have_n = false;
  std::stringstream pairs(spec);
  std::string pair;
  while (std::getline(pairs, pair, ';')) {
    const std::size_t equals = pair.find('=');
    if (equals == std::string::npos) {
      throw InputError("case matrix '" + spec + "': '" + pair + "' is not key=list");
    }
    const std::string key = pair.substr(0, equals);
    const std::string list = pair.substr(equals + 1);
    if (key == "w") {
      matrix.worlds = parse_numbers<std::uint32_t>(key, list);
      have_w = true;
    } else if (key == "n") {
      matrix.counts = parse_numbers<std::uint64_t>(key, list);
      have_n = true;
    } else if (key == "seed") {
      matrix.seeds = parse_numbers<std::uint64_t>(key, list);
    } else if (key == "gen") {
      const auto gens = parse_numbers<std::uint32_t>(key, list);
      if (gens.size() != 1) throw InputError("case matrix: key 'gen' takes one version");
      matrix.gen = gens[0];
    } else if (key == "contract") {
      const auto contract = parse_contract(list);
      if (!contract || *contract == Contract::kLibrarySum) {
        throw InputError("case matrix: contract '" + list + "' is not fixed-order or exact");
      }
      matrix.contract = list;
    } else if (key == "coll") {
      if (!parse_collective(list)) {
        throw InputError("case matrix: coll '" + list + "' is not all-reduce or reduce-scatter");
      }
      matrix.coll = list;
    } else if (key == "op") {
      matrix.ops = parse_words(list);
    } else if (key == "dist") {
      matrix.dists = parse_words(list);
    } else if (key == "dtype") {
      matrix.dtypes = parse_words(list);
    } else {
      throw InputError("case matrix '" + spec + "': unknown key '" + key +
                       "' (keys: contract, coll, dtype, w, n, dist, seed, op, gen)");
    }
  }
  if (!have_w || !have_n) throw InputError("case matrix '" + spec + "': needs both w= and n=");
  return matrix;
}

std::vector<CaseId> expand_case_matrix(const CaseMatrix& matrix) {
  if (matrix.worlds.empty()) throw InputError("case matrix: no world sizes (--world)");
  if (matrix.counts.empty()) throw InputError("case matrix: no element counts (--count)");
  const auto contract = parse_contract(matrix.contract);
  if (!contract || *contract == Contract::kLibrarySum) {
    throw InputError("case matrix: contract '" + matrix.contract +
                     "' has no golden digests (fixed-order or exact)");
  }
  std::vector<Op> ops;
  for (const std::string& text : matrix.ops) {
    const auto op = parse_op(text);
    if (!op) throw InputError("case matrix: op '" + text + "' is not sum or mean");
    ops.push_back(*op);
  }
  std::vector<Distribution> dists;
  for (const std::string& text : matrix.dists) {
    if (text == "all") {
      dists.insert(dists.end(), std::begin(kAllDistributions), std::end(kAllDistributions));
      continue;
    }
    const auto dist = parse_distribution(text);
    if (!dist) throw InputError("case matrix: dist '" + text + "' is not a distribution");
    dists.push_back(*dist);
  }
  const std::vector<DType> dtypes = parse_dtype_list(matrix.dtypes);
  const auto coll = parse_collective(matrix.coll);
  if (!coll) {
    throw InputError("case matrix: coll '" + matrix.coll + "' is not all-reduce or reduce-scatter");
  }
  std::vector<CaseId> cases;
  for (DType dtype : dtypes) {
  for (Op op : ops) {
    for (std::uint32_t w : matrix.worlds) {
      for (std::uint64_t n : matrix.counts) {
        for (Distribution dist : dists) {
          for (std::uint64_t seed : matrix.seeds) {
            CaseId id;
            id.contract = *contract;
            id.op = op;
            id.world = w;
            id.count = n;
            id.dist = dist;
            id.seed = seed;
            id.gen = matrix.gen;
            id.dtype = dtype;
            id.coll = *coll;
            validate_case_id(id);
            cases.push_back(id);
          }
        }
      }
    }
  }
  }
  return cases;
}

std::string format_case_matrix(const CaseMatrix& matrix) {
  const std::string contract =
      matrix.contract == "fixed-order" ? "" : "contract=" + matrix.contract + ";";
  const std::string coll = matrix.coll == "all-reduce" ? "" : "coll=" + matrix.coll + ";";
  const bool f32_only = matrix.dtypes.size() == 1 && matrix.dtypes[0] == "f32";
  const std::string dtype = f32_only ? "" : "dtype=" + join(matrix.dtypes) + ";";
  return contract + coll + dtype + "w=" + join(matrix.worlds) + ";n=" + join(matrix.counts) +
         ";dist=" + join(matrix.dists) + ";seed=" + join(matrix.seeds) + ";op=" + join(matrix.ops) +
         ";gen=" + std::to_string(matrix.gen);
}

}  // namespace rv
