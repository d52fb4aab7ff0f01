// A rank program over the real launch layer, for the supervised-world tests: finds its rank
// in the environment, opens the job directory (REDUCE_VERIFY_RENDEZVOUS, REDUCE_VERIFY_JOB_ID),
// passes `generations` file barriers in it, and rank 0 closes it.
//   launch_rank GENERATIONS [RANK GENERATION kill|stop]
// Rank RANK SIGKILLs (or SIGSTOPs) itself before barrier GENERATION. The deadline of every
// wait is $LAUNCH_RANK_TIMEOUT_MS (default 5000). Exit codes as the tool's:
// 2 bad input (a reused job id), 3 a runtime failure (a deadline), with the message on stderr.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/rendezvous/file_barrier.h"
#include "core/rendezvous/job_directory.h"
#include "core/rendezvous/launcher_env.h"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) return 100;
  const int generations = std::atoi(argv[1]);
  const long fault_rank = argc == 5 ? std::atol(argv[2]) : -1;
  const int fault_generation = argc == 5 ? std::atoi(argv[3]) : -1;
  const int fault_signal = argc == 5 && std::string(argv[4]) == "stop" ? SIGSTOP : SIGKILL;
  const char* timeout_text = std::getenv("LAUNCH_RANK_TIMEOUT_MS");
  try {
    const rv::EnvLookup env = rv::process_env();
    const auto launch = rv::detect_launch_rank(env);
    if (!launch) throw rv::InputError("no rank in the environment");
    const auto root = rv::rendezvous_root(env);
    const auto job_id = rv::derive_job_id(env);
    if (!root || !job_id) throw rv::InputError("no rendezvous directory or job id");
    const std::chrono::milliseconds timeout(timeout_text ? std::atol(timeout_text) : 5000);
    rv::JobDirectory job =
        rv::JobDirectory::open(*root, *job_id, launch->rank, launch->world, timeout);
    rv::FileBarrier barrier(job.file("barrier"), launch->rank, launch->world, timeout);
    for (int g = 0; g < generations; ++g) {
      if (static_cast<long>(launch->rank) == fault_rank && g == fault_generation) {
        ::raise(fault_signal);
      }
      barrier.wait();
    }
    job.close();
    return 0;
  } catch (const rv::InputError& e) {
    std::fprintf(stderr, "launch_rank: %s\n", e.what());
    return 2;
  } catch (const rv::Error& e) {
    std::fprintf(stderr, "launch_rank: %s\n", e.what());
    return 3;
  }
}
