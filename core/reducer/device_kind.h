// Where a reducer's device keeps its memory and does its element work. The reducers' defaults
// follow it (FixedOrderOptions::for_device, ExactOptions::for_device): the host folds in
// cache-sized pieces and in place and reduces the exact contract through the owners; a GPU
// works in large pieces from a stacked table and sums the exact digits through the library.
#pragma once

namespace rv {

enum class DeviceKind { kHost, kGpu };

}  // namespace rv
