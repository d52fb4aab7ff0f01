#include "core/transport/gloo/bind_address_agreement.h"

#include <sstream>
#include <vector>

#include "core/deadline.h"
#include "core/error.h"
#include "core/rendezvous/atomic_file.h"

namespace rv {
namespace {

constexpr const char* kRecordHeader = "reduce-verify bind candidates 1";

std::string record_path(const std::string& dir, std::uint32_t rank) {
  return detail::concat(dir, "/rank-", rank);
}

// Lines "key value"; one "address <interface> <a.b.c.d>/<prefix>[ loopback]" per address;
// "end" last, so a record cut short is told from a whole one.
std::string encode(const BindCandidates& mine) {
  std::ostringstream text;
  text << kRecordHeader << "\nrank " << mine.rank << "\nplace " << mine.place << "\nhost "
       << mine.host << "\n";
  for (const InterfaceAddress& address : mine.addresses) {
    text << "address " << address.interface << " " << dotted(address.address) << "/"
         << address.prefix_length << (address.loopback ? " loopback" : "") << "\n";
  }
  text << "end\n";
  return text.str();
}

bool parse_dotted(const std::string& text, std::uint32_t* address) {
  std::istringstream in(text);
  std::uint32_t value = 0;
  for (int part = 0; part < 4; ++part) {
    unsigned octet = 256;
    char dot = '.';
    if (part > 0 && (!(in >> dot) || dot != '.')) return false;
    if (!(in >> octet) || octet > 255) return false;
    value = (value << 8) | octet;
  }
  *address = value;
  return in.peek() == std::char_traits<char>::eof();
}

InterfaceAddress parse_address(const std::string& line) {
  std::istringstream in(line);
  InterfaceAddress address;
  std::string cidr, mark;
  if (!(in >> address.interface >> cidr)) throw std::invalid_argument("address line");
  const auto slash = cidr.find('/');
  if (slash == std::string::npos || !parse_dotted(cidr.substr(0, slash), &address.address)) {
    throw std::invalid_argument("address");
  }
  address.prefix_length = std::stoi(cidr.substr(slash + 1));
  if (address.prefix_length < 0 || address.prefix_length > 32) {
    throw std::invalid_argument("prefix length");
  }
  if (in >> mark) {
    if (mark != "loopback") throw std::invalid_argument("mark");
    address.loopback = true;
  }
  return address;
}

BindCandidates decode(const std::string& text, std::uint32_t rank, const std::string& path) {
  BindCandidates record;
  std::istringstream lines(text);
  std::string line;
  const auto value = [&](const std::string& key) {
    if (!std::getline(lines, line) || line.rfind(key + " ", 0) != 0) {
      throw std::invalid_argument("no '" + key + "' line");
    }
    return line.substr(key.size() + 1);
  };
  try {
    if (!std::getline(lines, line) || line != kRecordHeader) {
      throw std::invalid_argument("unknown format");
    }
    record.rank = static_cast<std::uint32_t>(std::stoul(value("rank")));
    record.place = value("place");
    record.host = value("host");
    bool ended = false;
    while (!ended && std::getline(lines, line)) {
      ended = line == "end";
      if (ended) continue;
      if (line.rfind("address ", 0) != 0) throw std::invalid_argument("no 'address' line");
      record.addresses.push_back(parse_address(line.substr(8)));
    }
    if (!ended) throw std::invalid_argument("truncated");
  } catch (const std::logic_error& what) {  // invalid_argument, and std::stoul's out_of_range
    throw RuntimeFailure(detail::concat("bind address (--hostname auto): ", path,
                                        " is not a record this tool wrote (", what.what(), ")"));
  }
  if (record.rank != rank) {
    throw RuntimeFailure(
        detail::concat("bind address (--hostname auto): ", path, " names rank ", record.rank));
  }
  return record;
}

}  // namespace

std::string agree_bind_address(const BindAddressAgreementOptions& options,
                               const BindCandidates& mine) {
  RV_ENFORCE_LT(InputError, options.rank, options.world, "bind address: rank out of range");
  RV_ENFORCE_EQ(InputError, mine.rank, options.rank, "bind address: the record is another rank's");
  RV_ENFORCE_LT(InputError, 0, options.timeout.count(),
                "bind address: the timeout must be positive");
  const Deadline deadline(options.timeout);
  make_directories(options.dir);
  write_file_atomically(record_path(options.dir, options.rank), encode(mine));

  std::vector<BindCandidates> world(options.world);
  std::vector<bool> read(options.world, false);
  world[options.rank] = mine;
  read[options.rank] = true;
  Backoff backoff;
  for (;;) {
    std::vector<std::uint32_t> missing;
    for (std::uint32_t r = 0; r < options.world; ++r) {
      if (read[r]) continue;
      const std::string path = record_path(options.dir, r);
      if (const auto text = read_small_file(path)) {
        world[r] = decode(*text, r, path);
        read[r] = true;
      } else {
        missing.push_back(r);
      }
    }
    if (missing.empty()) break;
    if (deadline.passed()) {
      throw DeadlineExceeded(
          detail::concat("bind address (--hostname auto) on rank ", options.rank, " of ",
                         options.world, " (", options.dir, "): ", ranks_text(missing),
                         " published no addresses within ", format_duration(options.timeout)));
    }
    backoff.sleep(deadline);
  }

  // This rank's own failure first, so its message is about itself; then any other rank's, so
  // a world that cannot connect stops on every rank now instead of at its peers' deadlines.
  const std::string address = choose_bind_address(world, options.rank);
  for (std::uint32_t r = 0; r < options.world; ++r) {
    if (r != options.rank) choose_bind_address(world, r);
  }
  return address;
}

}  // namespace rv
