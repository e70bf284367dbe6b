#!/usr/bin/env bash
# session 24, run 10: the final text (the schedule's even form) - the GPU tests it touches, issue 22's
# tables (bf16 and fp8) through the re-swept shipped DBs merged as an install merges them, the
# uniform targets and issue 28's 128-head shapes: session 23's run 11 script, as it is
exec reports/h100/session23/scripts/s23f.sh "$@"
