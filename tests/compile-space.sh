#!/usr/bin/env bash
# compile-space.sh MLA_TUNE ARCH [--report NAME] [compile options] - compiles
# ARCH's whole search space (or what the options select) and fails unless
# every variant compiled, none with its matrix-unit products serialised by
# the compiler, and every one has a register count from the
# compiler.  The per-variant report (registers, shared memory / LDS, stack,
# spills) is kept in compile-reports/NAME.txt under the current folder
# (ctest runs it in build/tests/); run-tests.sh prints the AMD matrix-core one.
set -uo pipefail
bin=$1; arch=$2; shift 2
name=$arch
if [ "${1:-}" = "--report" ]; then name=$2; shift 2; fi
mkdir -p compile-reports
log=compile-reports/$name.txt
"$bin" compile --arch "$arch" --no-cache "$@" > "$log" 2>&1
rc=$?
tail -3 "$log"
# rows: status ms origin regs sgprs shared stack spill variant
bad_regs=$(awk '$1 == "ok" && ($4 == "-1" || $4 == "0")' "$log" | wc -l)
ok=$(awk '$1 == "ok"' "$log" | wc -l)
failed=$(awk '$1 == "FAILED"' "$log" | wc -l)
# compiled, but with its matrix-unit products serialised by the compiler
# (ptxas C7520): correct and 1.2-1.45x slower (PERFLOG session 29)
serial=$(awk '$1 == "SERIAL"' "$log" | wc -l)
echo "$arch: $ok ok, $failed failed, $serial serialized, $bad_regs without a register count (report: $PWD/$log)"
grep -A2 FAILED "$log" | head -20
awk '$1 == "SERIAL"' "$log" | head -20
[ "$rc" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$serial" -eq 0 ] && [ "$ok" -gt 0 ] && [ "$bad_regs" -eq 0 ]
