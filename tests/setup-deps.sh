#!/usr/bin/env bash
# setup-deps.sh - installs what building and testing mla-tune needs on a
# Debian 12 host, and nothing when it is all there already.
#
#   build:   cmake, gcc, pkg-config, libsqlite3-dev, libyaml-dev,
#            libamdhip64-dev (HIP headers for the AMD backend),
#            libcmark-gfm(-extensions)-dev (Markdown -> HTML for reports)
#   tests:   sqlite3 (CLI, for DB inspection in tests),
#            clang-19, lld-19, rocm-device-libs (offline gfx942 compiles),
#            libclang-rt-19-dev (libFuzzer, ASan/UBSan runtimes),
#            clang-22, lld-22 (gfx950 compiles, and the AMD kernels built
#            for the host by the CPU emulation; Debian 12's security suite)
#   CUDA:    the CUDA toolkit headers (cuda.h, nvrtc.h) and libnvrtc are
#            expected at /usr/local/cuda; they are not Debian packages.
set -euo pipefail
packages=(cmake gcc make pkg-config libsqlite3-dev libyaml-dev libamdhip64-dev sqlite3
          libcmark-gfm-dev libcmark-gfm-extensions-dev
          clang-19 lld-19 rocm-device-libs libclang-rt-19-dev clang-22 lld-22)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -f /usr/local/cuda/include/cuda.h ] && [ -z "${CUDA_HOME:-}" ]; then
  echo "setup-deps: warning: CUDA headers not found at /usr/local/cuda/include (set CUDA_HOME)" >&2
fi
