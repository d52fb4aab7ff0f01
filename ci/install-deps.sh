#!/usr/bin/env bash
# Installs every build and test dependency from Debian's packages (root, Debian 12).
# CUDA is not a Debian package here: when /usr/local/cuda exists the GPU code is built too.
set -euo pipefail
packages=(
  build-essential cmake ninja-build git
  libcli11-dev libxxhash-dev xxhash nlohmann-json3-dev   # CLI, digests, JSON reports
  libgloo-dev                                            # the CPU transport
  libssl-dev                                             # HMAC-SHA256 of the membership handshake
  libgtest-dev libgmock-dev libbenchmark-dev             # tests (gmock matchers) and benchmarks
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

# NCCL's headers, for a build with CUDA (nothing is linked: NCCL is dlopen'ed at run time).
# Debian has no NCCL package; PyPI's nvidia-nccl-cu13 wheel carries nccl.h, and only its
# include folder is kept, where core/transport/nccl/CMakeLists.txt looks.
nccl_headers=/usr/local/share/reduce-verify/nccl
if [[ -x /usr/local/cuda/bin/nvcc && ! -f /usr/local/cuda/include/nccl.h &&
      ! -f $nccl_headers/include/nccl.h ]]; then
  echo "install-deps: NCCL headers from PyPI's nvidia-nccl-cu13 into $nccl_headers"
  wheels=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary :all: -d "$wheels" "nvidia-nccl-cu13==2.30.7"
  python3 - "$wheels"/nvidia_nccl_cu13-*.whl "$nccl_headers" <<'PY'
import pathlib, sys, zipfile
wheel, target = zipfile.ZipFile(sys.argv[1]), pathlib.Path(sys.argv[2]) / "include"
target.mkdir(parents=True, exist_ok=True)
for name in wheel.namelist():
    if name.startswith("nvidia/nccl/include/") and not name.endswith("/"):
        path = target / name[len("nvidia/nccl/include/"):]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(wheel.read(name))
PY
  rm -rf "$wheels"
fi
echo "install-deps: all dependencies present"
