#!/usr/bin/env bash
# compile-probes.sh SOURCE_DIR - compiles the standalone GPU probes
# (tuner/probes/*.cu: programs run by hand on the GPU machine, outside the
# runtime) for sm_90a with the CUDA toolkit's nvcc, so one that no longer
# builds fails here rather than on the GPU machine.  Skipped (77) on a host
# without nvcc.
set -uo pipefail
src=$1
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$nvcc" ]; then
  echo "no nvcc (looked on PATH and in /usr/local/cuda/bin): probes not compiled"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for f in "$src"/tuner/probes/*.cu; do
  if "$nvcc" -O2 -gencode arch=compute_90a,code=sm_90a -c -o "$out/$(basename "$f").o" "$f"; then
    echo "ok     $f"
  else
    echo "FAILED $f"
    status=1
  fi
done
exit $status
