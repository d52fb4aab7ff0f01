#!/usr/bin/env bash
# Regenerates golden/fixed-order.xxh128 and golden/exact.xxh128, the committed suite. A generator never changes
# silently: regenerating must reproduce the committed file byte for byte unless the
# generator version changed (then the file gets new cases, not new digests for old ones).
#   usage: golden/regenerate.sh [path/to/reduce-verify]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tool=${1:-"$here/../build/verify/reduce-verify"}
# The matrix (docs/DESIGN.md §3, issue 2): both ops, all five distributions, W from 1 to 256,
# N = 0, 1, below W (empty shards), remainders (1,000,003), and 2^24 + 43 elements.
matrices=(
  'w=1,2,3,4,5,7,8,16,64,256;n=0,1,3,1000,4099;dist=all;seed=1,2;op=sum,mean'
  'w=3,5,7,16;n=1000003;dist=all;seed=7;op=sum,mean'
  'w=2,4,8;n=65536,131101;dist=all;seed=11,12;op=sum,mean'
  'w=64,256;n=100003;dist=normal,cancel,exact;seed=5;op=sum,mean'
  'w=2,4;n=16777259;dist=normal,cancel,special;seed=3;op=sum,mean'
  # bf16 and f16 (issue 19, docs/DESIGN.md §2.5): the same W × N × distribution spread with one
  # seed each, and one 2^24 + 43 case per dtype, so the live gate in CI stays within its time.
  # Appended after the binary32 matrices: every binary32 line keeps its place and digest.
  'dtype=bf16,f16;w=1,2,3,4,5,7,8,16,64,256;n=0,1,3,1000,4099;dist=all;seed=1;op=sum,mean'
  'dtype=bf16,f16;w=3,5,7,16;n=1000003;dist=all;seed=7;op=sum,mean'
  'dtype=bf16,f16;w=2,4,8;n=65536,131101;dist=all;seed=11;op=sum,mean'
  'dtype=bf16,f16;w=64,256;n=100003;dist=normal,cancel,exact;seed=5;op=sum,mean'
  'dtype=bf16,f16;w=2;n=16777259;dist=normal;seed=3;op=sum'
  # The reduce-scatter (issue 38, docs/DESIGN.md §2.6): the same W × N × distribution spread
  # in all three dtypes (n = 0 and n < W give empty shards; 1000 and 4099 uneven ones), and
  # 2^20 + 3 elements at W = 3 and 8. Appended: every all-reduce line keeps its place.
  'coll=reduce-scatter;dtype=f32,bf16,f16;w=1,2,3,4,5,7,8,16,64,256;n=0,1,3,1000,4099;dist=all;seed=1;op=sum,mean'
  'coll=reduce-scatter;dtype=f32,bf16,f16;w=3,8;n=1048579;dist=normal,special;seed=1;op=mean'
)
for contract in fixed-order exact; do
  args=()
  for m in "${matrices[@]}"; do
    # contract= only when it is not fixed-order, so the fixed-order header stays as it was.
    if [[ $contract == exact ]]; then args+=(--matrix "contract=exact;$m"); else args+=(--matrix "$m"); fi
  done
  "$tool" golden --orders 8 "${args[@]}" -o "$here/$contract.xxh128"
done
