#include "tests/netns/rank_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace rv::test {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

RankProcess::RankProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& out_prefix)
    : prefix_(out_prefix) {
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string key = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& add : env) replaced = replaced || add.rfind(key, 0) == 0;
    if (!replaced) environment.push_back(entry);
  }
  environment.insert(environment.end(), env.begin(), env.end());
  std::vector<char*> args, envp;
  std::vector<std::string> argv_copy = argv;
  for (std::string& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, (prefix_ + ".out").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, (prefix_ + ".err").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot spawn " + argv[0]);
}

RankProcess::~RankProcess() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool RankProcess::poll() {
  if (reaped_) return true;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
  reaped_ = true;
  ended_at_ = Clock::now();
  if (WIFEXITED(status)) exit_code_ = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) signal_ = WTERMSIG(status);
  return true;
}

std::string RankProcess::out() const { return read_all(prefix_ + ".out"); }
std::string RankProcess::err() const { return read_all(prefix_ + ".err"); }

std::string RankProcess::describe() const {
  if (!reaped_) return "running";
  if (signal_ != 0) return "signal " + std::to_string(signal_);
  return "exit " + std::to_string(exit_code_);
}

bool wait_for_all(RankProcesses& ranks, std::chrono::milliseconds limit) {
  const auto give_up = RankProcess::Clock::now() + limit;
  for (;;) {
    bool all = true;
    for (auto& rank : ranks) all = rank->poll() && all;
    if (all) return true;
    if (RankProcess::Clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace rv::test
