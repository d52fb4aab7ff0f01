// Agreeing on byte counts before any payload moves. Gloo's receiver checks an incoming
// message against the posted receive on its I/O thread, where a failed check terminates the
// process; a smaller message silently completes a larger receive. So every exchange first
// all-gathers every rank's byte counts and checks the whole matrix: all ranks see the same
// table and reach the same verdict, naming the same pair, before anything else is posted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rv {
namespace gloo_detail {

// One rank's row of the table: what it sends to each rank, then what it expects from each.
std::vector<std::uint64_t> size_row(const std::vector<std::size_t>& send_bytes,
                                    const std::vector<std::size_t>& recv_bytes);

// rows: world rows of 2 × world counts, row r from rank r. Empty when every send matches
// the receive its peer posted; otherwise the first mismatch (lowest sender, then lowest
// receiver), e.g. "rank 1 sends 8 bytes to rank 0, which expects 4 bytes from it".
std::string find_size_disagreement(const std::vector<std::uint64_t>& rows, std::uint32_t world);

}  // namespace gloo_detail
}  // namespace rv
