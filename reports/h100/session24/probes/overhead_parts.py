#!/usr/bin/env python3
"""Where Plan.run's per-call cost goes (issue 27): each step of its fast
path (a call whose layouts match the last checked call) timed alone, in
loops of 20000 calls, best of 7, same process, 16 heads B=1 x 1024.

Run from the repository root on the GPU machine:
    PYTHONPATH=python MLATUNE_LIBRARY=build/libmlatune.so python3 reports/h100/session24/probes/overhead_parts.py
"""
import time

import torch

import mlatune
from mlatune import plan as plan_module


def per_call_ns(fn, n=20000, rounds=7, sync=None):
    """Best per-call time of `rounds` loops of n calls; sync (if any) runs
    before each loop, untimed: the launching steps take loops of 200 so
    that the GPU's queue never fills (a full queue would time the GPU)."""
    best = None
    for _ in range(rounds):
        if sync is not None:
            sync()
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        t = (time.perf_counter_ns() - t0) / n
        best = t if best is None or t < best else best
    return best


def main():
    dev = torch.device("cuda", 0)
    rt = mlatune.Runtime(device=0)
    n, page, b, length = 16, 64, 1, 1024
    plan = rt.plan(n, page_size=page, q_dtype="bfloat16", kv_dtype="bfloat16", softmax_scale=576 ** -0.5,
                   max_batch=b)
    blocks = length // page
    q = torch.randn((b, 1, n, 576), device=dev).to(torch.bfloat16)
    kv = torch.randn((b * blocks, page, 576), device=dev).to(torch.bfloat16)
    bt = torch.arange(b * blocks, dtype=torch.int32, device=dev).view(b, blocks)
    lens = torch.full((b,), length, dtype=torch.int32, device=dev)
    out = torch.empty((b, 1, n, 512), dtype=torch.bfloat16, device=dev)
    lse = torch.empty((b, 1, n), dtype=torch.float32, device=dev)
    ws = torch.empty((max(plan.workspace_size, 16),), dtype=torch.uint8, device=dev)
    L = length
    plan.run(q, kv, bt, lens, out, lse, ws, seq_len_hint=L, max_seq_len_hint=L)
    last = plan._last
    tensors = (q, kv, bt, lens, out, lse, ws)
    check = last.check
    batch, max_blocks, wsb, strides, current = last.answer
    stream = current(0)
    packed = plan_module._PLAIN.pack(batch, L, max_blocks, q.data_ptr(), kv.data_ptr(), bt.data_ptr(),
                                     lens.data_ptr(), out.data_ptr(), lse.data_ptr(), ws.data_ptr(), wsb, L, 0)
    mlt_run, handle = plan._mlt_run, plan._handle

    def ptrs():
        q.data_ptr(), kv.data_ptr(), bt.data_ptr(), lens.data_ptr(), out.data_ptr(), lse.data_ptr(), ws.data_ptr()

    def one_ptr():
        q.data_ptr()

    def pack():
        plan_module._PLAIN.pack(batch, L, max_blocks, 1, 2, 3, 4, 5, 6, 7, wsb, L, 0)

    def empty(q, kv_cache, block_table, seq_lens, out, lse, workspace=None, *, seq_len_hint=-1, max_seq_len_hint=0,
              schedule=None, stream=None, kv_scale=None, lse_layout=None):
        return None

    steps = [
        ("empty function, run's signature", lambda: empty(q, kv, bt, lens, out, lse, ws, seq_len_hint=L,
                                                          max_seq_len_hint=L)),
        ("TensorGuards.check, 7 tensors", lambda: check(*tensors)),
                ("7 x data_ptr()", ptrs),
        ("1 x data_ptr()", one_ptr),
        ("current stream", lambda: current(0)),
        ("_PLAIN.pack, 13 values", pack),
        ("mlt_plan_run (ctypes, packed)", lambda: mlt_run(handle, packed, stream)),
        ("Plan.run_raw", lambda: plan.run_raw(b, q.data_ptr(), kv.data_ptr(), bt.data_ptr(), lens.data_ptr(),
                                              out.data_ptr(), lse.data_ptr(), ws.data_ptr(), ws.numel(), blocks,
                                              L, L, 0, stream)),
        ("Plan.run", lambda: plan.run(q, kv, bt, lens, out, lse, ws, seq_len_hint=L, max_seq_len_hint=L)),
    ]
    print(f"torch {torch.__version__}; {torch.cuda.get_device_name(dev)}; per call, ns")
    for name, fn in steps:
        fn()
        torch.cuda.synchronize()
        launches = name.startswith(("mlt_plan_run", "Plan."))
        t = per_call_ns(fn, 200, 60, torch.cuda.synchronize) if launches else per_call_ns(fn)
        print(f"{name:36s} {t:9.0f}")
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
