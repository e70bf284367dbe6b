#!/usr/bin/env bash
# session 16, diagnosis 2: what a views plan costs on the length-aware transposed path now (bench --views),
# and Nsight Compute's counters for both forms of the decode and reduce kernels
set -uo pipefail
OUT=${OUT:-/tmp/o}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/.deps/lib/usr/lib/x86_64-linux-gnu
if [ "$(cd /work/main 2>/dev/null && pwd -P)" != "$(pwd -P)" ]; then mkdir -p /work && rm -rf /work/main && ln -s "$(pwd -P)" /work/main; fi
export bin=$PWD/.deps/lead/mla-tune
NCU=/usr/local/cuda/bin/ncu
HEAD=$PWD/.deps/exp/head
LA16="tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=1"
G64="tile_q=64,kv_granularity=16,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,split_reduce=0,groups_per_cu=0"
export MLA_TUNE_KERNEL_DIR=$HEAD
{
for r in 1 2; do
  for views in "" "--views"; do
    echo "### round $r LA16 $views"
    $bin bench --cache-dir /tmp/c-head --no-ceilings $views --heads 16 --batch 32,128 --lengths long-tail --variant $LA16 | grep -E "^ +16"
    echo "### round $r G64 uniform $views"
    $bin bench --cache-dir /tmp/c-head --no-ceilings $views --heads 16 --batch 128 --seq-len 1024 --variant $G64 | grep -E "^ +16"
  done
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum,smsp__cycles_active.avg,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,smsp__sass_inst_executed_op_global_st.sum
for views in "" "--views"; do
  echo "### ncu LA16 B=32 long-tail $views"
  timeout 120 $NCU --clock-control none --metrics $M -k regex:'^mla_(decode|reduce)' --launch-skip 4 -c 4 $bin bench --cache-dir /tmp/c-head --no-ceilings --warmup 1 --reps 3 $views --heads 16 --batch 32 --lengths long-tail --variant $LA16 2>&1 | grep -E "^  mla_|^    [a-z]" | sed 's/  */ /g'
done
echo "### SASS opcode counts of the decode kernel, both forms (cuobjdump of the cached code objects)"
for w in 0 1; do
  /usr/local/cuda/bin/nvcc -arch=sm_90a -cubin -std=c++17 -o /tmp/la16-v$w.cubin .deps/dump/la16-v$w.cu && /usr/local/cuda/bin/cuobjdump -sass -fun mla_decode /tmp/la16-v$w.cubin > $OUT/sass-v$w.txt
  echo "v$w: $(grep -cE '^ +/\*[0-9a-f]{4}\*/' $OUT/sass-v$w.txt) instructions"
done
} 2>&1 | tee $OUT/diag23b.txt
