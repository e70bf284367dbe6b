#!/usr/bin/env bash
# hiprtc-gfx90a.sh MLA_TUNE - compiles kernel variants for gfx90a (MI200)
# through hiprtc, the runtime compiler an AMD host uses, wherever a hiprtc
# is found (Debian 12 builds it into libamdhip64.so.5; ROCm installs ship
# libhiprtc.so.N).  gfx90a because Debian 12's hiprtc (5.2) aborts inside
# itself for gfx940 and newer (shared/AMD-COMPILE.md); the point is the
# hiprtc path (__HIPCC_RTC__, no HIP headers) of the prelude and kernels,
# SIMT and MFMA, every dtype.  Skips (77) when no hiprtc loads, saying what
# was tried.
set -uo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
here=$(cd "$(dirname "$0")/.." && pwd)
# gfx90a takes the gfx942 spaces' shapes (64 KiB of LDS, MFMA 16x16x16)
sed 's/^arch: gfx942/arch: gfx90a/' "$here/configs/spaces/gfx942.yaml" > "$tmp/simt.yaml"
sed 's/^arch: gfx942/arch: gfx90a/' "$here/configs/spaces/mma/gfx942.yaml" > "$tmp/mma.yaml"
export MLA_TUNE_AMD_COMPILER=hiprtc
"$bin" compile --arch gfx90a --space "$tmp/simt.yaml" --defaults-only --all-dtypes --no-cache > "$tmp/simt.txt" 2>&1
rc1=$?
if grep -q "hiprtc not found" "$tmp/simt.txt"; then
  echo "SKIP: no hiprtc on this host:"; cat "$tmp/simt.txt"; exit 77
fi
"$bin" compile --arch gfx90a --space "$tmp/mma.yaml" --all-dtypes --limit 1 --no-cache > "$tmp/mma.txt" 2>&1
rc2=$?
head -1 "$tmp/simt.txt"
for f in simt mma; do
  echo "-- $f: $(grep -E '^[0-9]+ variants:' "$tmp/$f.txt")"
  grep -A3 FAILED "$tmp/$f.txt" | head -20
done
ok=$(cat "$tmp/simt.txt" "$tmp/mma.txt" | awk '$1 == "ok"' | wc -l)
echo "gfx90a through hiprtc: $ok variants compiled"
[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && [ "$ok" -ge 12 ]
