// A minimal work-sharing loop for independent cases (check, golden). Exceptions thrown by
// a task are rethrown on the calling thread after every worker has stopped.
#pragma once

#include <cstddef>
#include <functional>

namespace rv {

// Runs task(i) for i in [0, count) on up to `threads` threads (0: one per hardware thread).
void parallel_for(std::size_t count, unsigned threads,
                  const std::function<void(std::size_t)>& task);

}  // namespace rv
