// The error hierarchy of reduce-verify. The library throws; only `main` catches, and maps
// each class to one exit code of docs/DESIGN.md §6 (see verify/common/exit_codes.h).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace rv {

// Base of every error the library throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad usage or bad input: a file, a line, a field that is wrong. Exit code 2.
class InputError : public Error {
 public:
  using Error::Error;
};

// A runtime failure: a peer died, a deadline passed, a rendezvous failed, a device
// error. Exit code 3.
class RuntimeFailure : public Error {
 public:
  using Error::Error;
};

// A wait that ran past its deadline (a special runtime failure, so callers can say which
// peer or phase timed out).
class DeadlineExceeded : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

// A bug in this tool: an internal invariant did not hold (e.g. the emulated dataflow and
// the reference fold disagree). Exit code 3, and the message says it is a bug.
class InternalError : public Error {
 public:
  using Error::Error;
};

namespace detail {

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// The message parts of an enforce, one space between each ("arena length of rank", 3,
// "differs" reads "arena length of rank 3 differs").
template <typename... Parts>
std::string words(const Parts&... parts) {
  std::ostringstream out;
  bool first = true;
  ((out << (first ? "" : " ") << parts, first = false), ...);
  return out.str();
}

template <typename E, typename A, typename B, typename... Parts>
[[noreturn]] void enforce_failed(const char* file, int line, const char* expr_a, const char* op,
                                 const char* expr_b, const A& a, const B& b,
                                 const Parts&... parts) {
  throw E(concat(words(parts...), (sizeof...(parts) ? " " : ""), "(", expr_a, " ", op, " ",
                 expr_b, ": ", a, " vs ", b, ") [", file, ":", line, "]"));
}

}  // namespace detail

}  // namespace rv

// Enforce-style checks in the manner of GLOO_ENFORCE_EQ: on failure they throw `E` with a
// message that carries both values and the source position, e.g.
//   "arena lengths differ (a.size() == b.size(): 4000 vs 4096) [core/shard_plan.cc:12]".
#define RV_ENFORCE_CMP(E, a, op, b, ...)                                              \
  do {                                                                                \
    const auto& rv_enforce_a_ = (a);                                                  \
    const auto& rv_enforce_b_ = (b);                                                  \
    if (!(rv_enforce_a_ op rv_enforce_b_)) {                                          \
      ::rv::detail::enforce_failed<E>(__FILE__, __LINE__, #a, #op, #b, rv_enforce_a_, \
                                      rv_enforce_b_, ##__VA_ARGS__);                  \
    }                                                                                 \
  } while (false)

#define RV_ENFORCE_EQ(E, a, b, ...) RV_ENFORCE_CMP(E, a, ==, b, ##__VA_ARGS__)
#define RV_ENFORCE_LE(E, a, b, ...) RV_ENFORCE_CMP(E, a, <=, b, ##__VA_ARGS__)
#define RV_ENFORCE_LT(E, a, b, ...) RV_ENFORCE_CMP(E, a, <, b, ##__VA_ARGS__)
#define RV_ENFORCE_GE(E, a, b, ...) RV_ENFORCE_CMP(E, a, >=, b, ##__VA_ARGS__)
