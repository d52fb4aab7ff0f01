#include "verify/audit/chained_lines.h"

#include "core/digest/digest.h"
#include "core/error.h"

namespace rv {
namespace {

constexpr std::string_view kChainKey = ",\"chain\":\"";
constexpr std::size_t kSuffixLength = kChainKey.size() + 32 + 2;  // ,"chain":"<32>"}

// The record of one line, its link to `head` checked.
ChainedRecord read_record(std::string_view line, const std::string& head, std::string& chain,
                          std::size_t number, const std::string& where) {
  if (line.size() < kSuffixLength + 2 ||
      line.substr(line.size() - kSuffixLength, kChainKey.size()) != kChainKey ||
      line.substr(line.size() - 2) != "\"}") {
    fail_at(where, "does not end in ,\"chain\":\"<32 hex digits>\"}");
  }
  chain = std::string(line.substr(line.size() - 34, 32));
  const std::string body = std::string(line.substr(0, line.size() - kSuffixLength)) + "}";
  ChainedRecord record{number, where, {}};
  try {
    record.value = nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& error) {
    fail_at(where, std::string("not JSON: ") + error.what());
  }
  if (!record.value.is_object()) fail_at(where, "not a JSON object");
  if (!parse_digest_hex(chain)) fail_at(where, "its chain is not 32 lowercase hex digits");
  const std::string expected = chain_next(head, body);
  if (chain != expected) {
    fail_at(where, "the chain is broken: the record says " + chain +
                       ", the records up to it give " + expected +
                       " (this record or the one before was edited, moved or dropped)");
  }
  return record;
}

}  // namespace

void fail_at(const std::string& where, const std::string& what) {
  throw InputError(where + ": " + what);
}

std::string chain_next(std::string_view previous, std::string_view body) {
  std::string bytes;
  bytes.reserve(previous.size() + body.size() + 3);
  bytes.append(previous).append(body);
  bytes.append((4 - bytes.size() % 4) % 4, '\0');
  return digest_bytes(bytes.data(), bytes.size()).hex();
}

ChainedLines read_chained_lines(const std::string& path, std::string_view text,
                                std::string_view what,
                                const std::function<void(const ChainedRecord&)>& handle) {
  ChainedLines lines;
  lines.head = std::string(kChainGenesis);
  if (text.empty()) {
    throw InputError(path + ": an empty " + std::string(what) + " (no header record)");
  }
  std::size_t begin = 0, number = 0;
  while (begin < text.size()) {
    ++number;
    const std::string where = path + ":" + std::to_string(number);
    const std::size_t newline = text.find('\n', begin);
    const bool last_unterminated = newline == std::string_view::npos;
    const std::string_view line =
        text.substr(begin, last_unterminated ? std::string_view::npos : newline - begin);
    begin = last_unterminated ? text.size() : newline + 1;
    try {
      std::string chain;
      handle(read_record(line, lines.head, chain, number, where));
      lines.head = chain;
      lines.records = number;
    } catch (const InputError&) {
      if (!last_unterminated || number == 1) throw;
      lines.torn_record = number;  // still being written: the complete records stand
    }
  }
  return lines;
}

}  // namespace rv
