// A case matrix: lists of ops, world sizes, counts, distributions and seeds whose cross
// product is a list of case ids (`golden`, `digest`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/case_id.h"

namespace rv {

struct CaseMatrix {
  std::string contract = "fixed-order";  // fixed-order | exact (the contracts with goldens)
  std::string coll = "all-reduce";        // all-reduce | reduce-scatter (docs/DESIGN.md §2.6)
  std::vector<std::string> ops = {"sum", "mean"};
  std::vector<std::uint32_t> worlds;
  std::vector<std::uint64_t> counts;
  std::vector<std::string> dists = {"all"};
  std::vector<std::uint64_t> seeds = {1};
  std::uint32_t gen = kLatestGenerator;
  std::vector<std::string> dtypes = {"f32"};  // f32, bf16, f16 (docs/DESIGN.md §2.5)
};

// Adds --dtype LIST (f32, bf16, f16; comma-separated, repeatable) filling `dtypes`; the first
// given replaces what `dtypes` held (its default). Bad names are a usage error.
void add_dtype_option(CLI::App& app, std::vector<std::string>& dtypes,
                      const std::string& description);

// Adds --coll (all-reduce or reduce-scatter) filling `coll`.
void add_coll_option(CLI::App& app, std::string& coll);

// Adds --contract, --coll, --op, --world, --count, --dist, --seed, --gen, --dtype to app
// (comma-separated lists).
void add_case_matrix_options(CLI::App& app, CaseMatrix& matrix);

// Parses a one-line matrix "w=1,2;n=0,1000;dist=all;seed=1,2;op=sum,mean" (keys w and n
// required; the others, contract= and coll= among them, default as in CaseMatrix). Throws InputError
// naming the key.
CaseMatrix parse_case_matrix(const std::string& spec);

// The cross product, in the order dtype, op, w, n, dist, seed; every id validated.
std::vector<CaseId> expand_case_matrix(const CaseMatrix& matrix);

// The spec of parse_case_matrix for a matrix (for golden file headers); contract= is written
// only when it is not fixed-order, coll= only when it is not all-reduce, and dtype= only when
// it is not f32 alone, so the headers of the older matrices stay as they were.
std::string format_case_matrix(const CaseMatrix& matrix);

}  // namespace rv
