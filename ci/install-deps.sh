#!/usr/bin/env bash
# Installs every build and test dependency from Debian's packages (root, Debian 12).
# CUDA is not a Debian package here: when /usr/local/cuda exists the GPU code is built too.
set -euo pipefail
packages=(
  build-essential cmake ninja-build git
  libcli11-dev libxxhash-dev xxhash nlohmann-json3-dev   # CLI, digests, JSON reports
  libgloo-dev                                            # the CPU transport
  libssl-dev                                             # HMAC-SHA256 of the membership handshake
  libgtest-dev libbenchmark-dev                          # tests and benchmarks
  libmpfr-dev                                            # the exact contract's test oracle
  openmpi-bin                                            # the mpirun launcher test
  clang libclang-rt-14-dev                               # the libFuzzer targets
  python3-torch python3-pip python3-setuptools python3-wheel  # the Python package and its tests
  iproute2 nftables                                      # the network-namespace hosts (tests/netns)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install-deps: all dependencies present"
