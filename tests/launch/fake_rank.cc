// A stand-in for a rank process, for the supervisor tests. Its rank comes from
// REDUCE_VERIFY_RANK; its behaviour from its arguments, each "R:ACTION" (only rank R does it)
// or "*:ACTION" (every rank), done in order:
//   exit=N       exit with code N
//   sleep=MS     sleep MS milliseconds
//   kill         SIGKILL itself
//   stop         SIGSTOP itself
//   ignore-term  ignore SIGTERM from now on
//   env=NAME     append "NAME=value" (or "NAME unset") to $FAKE_RANK_OUT/env-R
// At start it writes its pid to $FAKE_RANK_OUT/pid-R (when FAKE_RANK_OUT is set), so a test
// can check afterwards that no rank outlived the supervisor. With no exit action it exits 0.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  const char* rank_text = std::getenv("REDUCE_VERIFY_RANK");
  if (rank_text == nullptr) {
    std::fprintf(stderr, "fake_rank: no REDUCE_VERIFY_RANK\n");
    return 100;
  }
  const std::string rank = rank_text;
  const char* out = std::getenv("FAKE_RANK_OUT");
  if (out != nullptr) {
    const std::string path = std::string(out) + "/pid-" + rank;
    std::ofstream(path + ".tmp") << ::getpid() << "\n";
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto colon = arg.find(':');
    if (colon == std::string::npos) return 101;
    const std::string who = arg.substr(0, colon), action = arg.substr(colon + 1);
    if (who != "*" && who != rank) continue;
    const auto equals = action.find('=');
    const std::string verb = action.substr(0, equals);
    const std::string value = equals == std::string::npos ? "" : action.substr(equals + 1);
    if (verb == "exit") return std::atoi(value.c_str());
    if (verb == "sleep")
      std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(value.c_str())));
    if (verb == "kill") ::raise(SIGKILL);
    if (verb == "stop") ::raise(SIGSTOP);
    if (verb == "ignore-term") ::signal(SIGTERM, SIG_IGN);
    if (verb == "env" && out != nullptr) {
      const char* v = std::getenv(value.c_str());
      std::ofstream(std::string(out) + "/env-" + rank, std::ios::app)
          << value << (v ? std::string("=") + v : std::string(" unset")) << "\n";
    }
  }
  return 0;
}
