// The digest of the C ABI: core/digest/digest.h's, so the Python package prints what
// `reduce-verify digest` prints for the same bytes.
#include <cstring>
#include <string>

#include "capi/last_error.h"
#include "capi/reduce_verify_c.h"
#include "capi/stacked_arguments.h"
#include "core/digest/digest.h"

extern "C" rv_status rv_digest_floats(const float* values, size_t count, char* hex_out) {
  return rv::capi::guarded("rv_digest_floats", [&] {
    if (hex_out == nullptr) throw rv::InputError("hex_out is a null pointer");
    if (values == nullptr && count != 0) throw rv::InputError("values is a null pointer");
    const float none = 0.0f;  // XXH3 of zero bytes still wants a readable address
    const std::string hex = rv::digest_floats(count ? values : &none, count).hex();
    std::memcpy(hex_out, hex.c_str(), hex.size() + 1);  // 32 digits and the NUL
  });
}

extern "C" rv_status rv_digest_values(const void* values, size_t count, int dtype, char* hex_out) {
  return rv::capi::guarded("rv_digest_values", [&] {
    const rv::DType type = rv::capi::dtype_from_c(dtype);
    if (hex_out == nullptr) throw rv::InputError("hex_out is a null pointer");
    if (values == nullptr && count != 0) throw rv::InputError("values is a null pointer");
    // The dtype's own bytes are hashed as they are (digest_values' bytes of the widened
    // values are these same bytes: widening and narrowing a value of the format is exact),
    // so bf16 and f16 NaN payloads are digested as given, like binary32's.
    const unsigned char none = 0;  // XXH3 of zero bytes still wants a readable address
    const std::string hex =
        rv::digest_bytes(count ? values : &none, count * rv::dtype_bytes(type)).hex();
    std::memcpy(hex_out, hex.c_str(), hex.size() + 1);
  });
}
