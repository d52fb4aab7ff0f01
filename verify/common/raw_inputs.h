// User-supplied arenas (docs/DESIGN.md §4): raw little-endian files of one dtype (binary32 by
// default; bf16 or f16, 2 bytes a value), one per rank, all the same length (e.g. gradient
// buckets dumped from a real run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/case_id.h"
#include "core/digest/digest.h"

namespace rv {

// Reads files[r] as rank r's arena, values of `dtype` widened to binary32 (exact). Throws
// InputError naming the file: missing or unreadable, a size not a multiple of the dtype's
// bytes, lengths that differ from file 0's, too many ranks or values. Sizes are checked
// before anything is read, so bad input never allocates.
std::vector<std::vector<float>> read_raw_inputs(const std::vector<std::string>& files,
                                                DType dtype = DType::kF32);

// The same checks without reading: returns the common number of values per file.
std::uint64_t check_raw_inputs(const std::vector<std::string>& files, DType dtype = DType::kF32);

// What `digest --inputs` and `run --inputs` print after the digest, so the two lines are
// the same: `contract=fixed-order,op=sum,w=3,n=1000,inputs=a.f32;b.f32;c.f32` (a bf16 or
// f16 reduction says so after the op, as a case id does: `op=sum,dtype=bf16,w=3,…`).
std::string inputs_label(const std::vector<std::string>& files, Op op, std::size_t count,
                         Contract contract = Contract::kFixedOrder, DType dtype = DType::kF32);

// The whole line: `<digest>  <label>`. A file name with a backslash, a newline or another
// control character would let the line end early, or forge a line of a golden file: its
// label is then escaped as xxhsum and sha256sum escape names (`\\` for a backslash, `\n`,
// `\r`, `\xHH` for other control bytes) and the line starts with a backslash.
std::string inputs_line(const Digest& digest, const std::vector<std::string>& files, Op op,
                        std::size_t count, Contract contract = Contract::kFixedOrder,
                        DType dtype = DType::kF32);

// The case a `run --inputs` verdict is filed under: the contract, its W, N and op (the data
// are the files, not a seeded arena) and dtype.
CaseId inputs_case(const std::vector<std::string>& files, Op op, std::size_t count,
                   Contract contract = Contract::kFixedOrder, DType dtype = DType::kF32);

}  // namespace rv
