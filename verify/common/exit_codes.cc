#include "verify/common/exit_codes.h"

#include <exception>
#include <iostream>
#include <new>

#include "core/error.h"

namespace rv {

int report_current_exception() {
  try {
    throw;
  } catch (const InputError& error) {
    std::cerr << "reduce-verify: error: " << error.what() << "\n";
    return kExitBadInput;
  } catch (const InternalError& error) {
    std::cerr << "reduce-verify: internal error (a bug in this tool): " << error.what() << "\n";
    return kExitRuntimeFailure;
  } catch (const RuntimeFailure& error) {
    std::cerr << "reduce-verify: runtime failure: " << error.what() << "\n";
    return kExitRuntimeFailure;
  } catch (const std::bad_alloc&) {
    std::cerr << "reduce-verify: runtime failure: out of memory\n";
    return kExitRuntimeFailure;
  } catch (const std::exception& error) {
    std::cerr << "reduce-verify: runtime failure: " << error.what() << "\n";
    return kExitRuntimeFailure;
  } catch (...) {
    std::cerr << "reduce-verify: runtime failure: unknown exception\n";
    return kExitRuntimeFailure;
  }
}

}  // namespace rv
