// The thread-per-rank test worlds speak the in-process world's names: the rank threads and
// their outcomes live with the in-process transport (core/transport/in_process/rank_threads.h),
// which the benchmarks use too, and the tests use them unqualified, with chrono literals.
#pragma once

#include "core/transport/in_process/rank_threads.h"

namespace rv::test {
using namespace std::chrono_literals;
using in_process::error_text;
using in_process::expect_no_errors;
using in_process::is_error;
using in_process::Latch;
using in_process::RankOutcome;
using in_process::RankThreads;
using in_process::StepOutcome;
}  // namespace rv::test

