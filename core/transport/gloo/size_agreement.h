// Agreeing on byte counts before a payload is sent. Gloo's receiver checks an incoming
// message against the posted receive on its I/O thread, where a failed check terminates the
// process; a smaller message silently completes a larger receive. So every rank sends every
// peer its whole row of counts: a pair starts its payload once both directions agree, and
// once all rows are in, every rank checks the whole matrix and reaches the same verdict,
// naming the same pair.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rv {
namespace gloo_detail {

// One rank's row of the table: what it sends to each rank, then what it expects from each.
std::vector<std::uint64_t> size_row(const std::vector<std::size_t>& send_bytes,
                                    const std::vector<std::size_t>& recv_bytes);

// Whether ranks a and b agree on both directions between them (rows as below).
// `row_length`: the words from one row to the next (the counts may be followed by other
// data); 0 means 2 × world.
bool pair_agrees(const std::vector<std::uint64_t>& rows, std::uint32_t world, std::uint32_t a,
                 std::uint32_t b, std::size_t row_length = 0);

// rows: world rows starting with 2 × world counts, row r from rank r. Empty when every send matches
// the receive its peer posted; otherwise the first mismatch (lowest sender, then lowest
// receiver), e.g. "rank 1 sends 8 bytes to rank 0, which expects 4 bytes from it".
std::string find_size_disagreement(const std::vector<std::uint64_t>& rows, std::uint32_t world,
                                   std::size_t row_length = 0);

}  // namespace gloo_detail
}  // namespace rv
