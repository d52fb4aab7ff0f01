#include "core/transport/gloo/size_agreement.h"

#include <sstream>

namespace rv {
namespace gloo_detail {

std::vector<std::uint64_t> size_row(const std::vector<std::size_t>& send_bytes,
                                    const std::vector<std::size_t>& recv_bytes) {
  std::vector<std::uint64_t> row(send_bytes.begin(), send_bytes.end());
  row.insert(row.end(), recv_bytes.begin(), recv_bytes.end());
  return row;
}

bool pair_agrees(const std::vector<std::uint64_t>& rows, std::uint32_t world, std::uint32_t a,
                 std::uint32_t b, std::size_t row_length) {
  if (row_length == 0) row_length = 2 * static_cast<std::size_t>(world);
  auto sends = [&](std::uint32_t from, std::uint32_t to) { return rows[from * row_length + to]; };
  auto expects = [&](std::uint32_t at, std::uint32_t from) {
    return rows[at * row_length + world + from];
  };
  return sends(a, b) == expects(b, a) && sends(b, a) == expects(a, b);
}

std::string find_size_disagreement(const std::vector<std::uint64_t>& rows, std::uint32_t world,
                                   std::size_t row_length) {
  if (row_length == 0) row_length = 2 * static_cast<std::size_t>(world);
  auto sends = [&](std::uint32_t from, std::uint32_t to) { return rows[from * row_length + to]; };
  auto expects = [&](std::uint32_t at, std::uint32_t from) {
    return rows[at * row_length + world + from];
  };
  for (std::uint32_t from = 0; from < world; ++from) {
    for (std::uint32_t to = 0; to < world; ++to) {
      if (sends(from, to) == expects(to, from)) continue;
      std::ostringstream out;
      if (from == to) {
        out << "rank " << from << " copies " << sends(from, to) << " bytes to itself but expects "
            << expects(to, from);
      } else {
        out << "rank " << from << " sends " << sends(from, to) << " bytes to rank " << to
            << ", which expects " << expects(to, from) << " bytes from it";
      }
      return out.str();
    }
  }
  return {};
}

}  // namespace gloo_detail
}  // namespace rv
