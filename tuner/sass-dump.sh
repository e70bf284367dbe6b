#!/usr/bin/env bash
# sass-dump.sh CACHE_DIR - disassembles every code object in an mla-tune
# code-object cache (files *.mtc: a header, then the cubin) with cuobjdump,
# one listing per file under $OUT/sass/, and counts the instructions of each
# kernel by opcode.  Needs the full CUDA toolkit (the H100 machine has it;
# the development host has no disassembler).  Prepare the cache here with
#   mla-tune compile --arch sm_90 --space ONE-VARIANT.yaml --cache-dir DIR
set -uo pipefail
dir=$1
OUT=${OUT:-/tmp/mla-tune-out}
CUOBJDUMP=${CUOBJDUMP:-/usr/local/cuda/bin/cuobjdump}
mkdir -p "$OUT/sass"
for f in $(find "$dir" -name '*.mtc'); do
  name=$(basename "$f" .mtc | cut -c1-12)
  off=$(grep -abo $'\x7fELF' "$f" | head -1 | cut -d: -f1)
  tail -c +$((off + 1)) "$f" > "/tmp/$name.cubin"
  "$CUOBJDUMP" -sass "/tmp/$name.cubin" > "$OUT/sass/$name.sass" 2>&1
  echo "== $name: $(grep -c '^ *\/\*[0-9a-f]*\*\/' "$OUT/sass/$name.sass") instructions"
  grep -oE '^ +/\*[0-9a-f]+\*/ +(@!?U?P[0-9T] +)?[A-Z0-9_.]+' "$OUT/sass/$name.sass" |
    awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -25 > "$OUT/sass/$name.ops"
done
