#!/usr/bin/env python3
"""python-parts.py - where Plan.run's per-call cost over the C call goes (issue 27), on a GPU host
with torch: the parts of run's remembered-layouts path timed alone, in turns, as medians of
per-call wall time (ns): a Python call of run's signature that does nothing, torch's TensorGuards
check over the call's 7 tensors, their 7 data_ptr() reads, the current raw stream, the packing of
mlt_decode_args, and the ctypes call with its arguments packed beforehand; then run itself.
16 heads, batch 1, 1024 keys (bench_overhead.py's first shape)."""
import statistics, struct, sys, time
sys.path.insert(0, "python")
import torch
import mlatune
from mlatune import plan as plan_module

dev = torch.device("cuda", 0)
rt = mlatune.Runtime(device=0)
plan = rt.plan(16, page_size=64, q_dtype="bfloat16", kv_dtype="bfloat16", softmax_scale=576 ** -0.5, max_batch=1)
b, n, L, blocks = 1, 16, 1024, 16
q = torch.randn((b, 1, n, 576), device=dev).to(torch.bfloat16)
kv = torch.randn((blocks, 64, 576), device=dev).to(torch.bfloat16)
bt = torch.arange(blocks, dtype=torch.int32, device=dev).view(1, blocks)
lens = torch.full((1,), L, dtype=torch.int32, device=dev)
out = torch.empty((b, 1, n, 512), dtype=torch.bfloat16, device=dev)
lse = torch.empty((b, 1, n), dtype=torch.float32, device=dev)
ws = torch.empty((max(plan.workspace_size, 16),), dtype=torch.uint8, device=dev)
tensors = (q, kv, bt, lens, out, lse, ws)
plan.run(q, kv, bt, lens, out, lse, ws, seq_len_hint=L, max_seq_len_hint=L)  # remembers the layouts
check = plan._last.check
raw_stream = torch._C._cuda_getCurrentRawStream
stream = raw_stream(0)
packed = plan_module._PLAIN.pack(1, L, blocks, q.data_ptr(), kv.data_ptr(), bt.data_ptr(), lens.data_ptr(),
                                 out.data_ptr(), lse.data_ptr(), ws.data_ptr(), ws.numel(), L, 0)
run_c, handle = plan._mlt_run, plan._handle


def nothing(q, kv_cache, block_table, seq_lens, out, lse, workspace=None, *, seq_len_hint=-1, max_seq_len_hint=0,
            schedule=None, stream=None, kv_scale=None, lse_layout=None):
    return None


def ptrs():
    return (q.data_ptr(), kv.data_ptr(), bt.data_ptr(), lens.data_ptr(), out.data_ptr(), lse.data_ptr(),
            ws.data_ptr())


parts = [
    ("python call, run's signature", lambda: nothing(q, kv, bt, lens, out, lse, ws, seq_len_hint=L, max_seq_len_hint=L)),
    ("TensorGuards.check, 7 tensors", lambda: check(*tensors)),
    ("7 data_ptr()", ptrs),
    ("current raw stream", lambda: raw_stream(0)),
    ("pack mlt_decode_args", lambda: plan_module._PLAIN.pack(1, L, blocks, 1, 2, 3, 4, 5, 6, 7, 8, L, 0)),
    ("C call (packed before)", lambda: run_c(handle, packed, stream)),
    ("run", lambda: plan.run(q, kv, bt, lens, out, lse, ws, seq_len_hint=L, max_seq_len_hint=L)),
]
perf = time.perf_counter_ns
times = {name: [] for name, _ in parts}
for rnd in range(200):
    torch.cuda.synchronize()
    for name, fn in parts:
        own = times[name]
        for _ in range(50):
            t0 = perf()
            fn()
            own.append(perf() - t0)
for name, _ in parts:
    print(f"{name:32s} {statistics.median(times[name]) / 1e3:6.2f} us")
