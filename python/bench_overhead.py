#!/usr/bin/env python3
"""Per-call cost of the Python package over the C call (issue 27: <= 5 us).

Three ways to make the same decode call, timed the same way:

  C call    mlt_plan_run through ctypes with mlt_decode_args packed once
            beforehand: the C runtime's own cost plus ctypes' call (the
            floor for any Python caller)
  run_raw   Plan.run_raw: integers in, packing per call, no checks
  run       Plan.run: torch tensors in, the current stream; the checks made
            when the layouts (shapes, dtypes, devices, strides) differ from
            the plan's last call, else only the pointers read and their
            alignment tested (mlatune/_layouts.py)
  run, checked
            Plan.run with the layouts forgotten before each call: every
            check every call (what the first call of a new batch pays)

each on a plan created with views=False (the default: the contiguous
kernels) and again on one created with views=True (kernels that place rows
through strides: what vLLM's forms need; the "/views" rows), plus, on the
views plan, the call in vLLM's form ("run/views, vLLM": the q pair as
views, out and lse [B, N, ...], a device kv scale; "C call, vLLM" is its
C call with the same views and scale; the tensors made once,
as an engine has them: what is timed is the package, not torch's view
operations).  The package's cost should not differ between the plans; on
the GPU the event columns show the kernels' cost.  The header says which
way the layouts are compared: torch's TensorGuards (one C call for all
tensors) or Python reads (a torch without them).

GPU mode (the default; needs torch with CUDA and libmlatune):

    python3 python/bench_overhead.py [--heads 16] [--batch 1] [--seq-len 1024]

prints, per path, the median of many calls of
  host us     wall time of the call on the host (time.perf_counter_ns):
              the cost a Python engine pays per call; the paths take
              turns of 100 calls (synchronised before each turn), so that
              a drift of the host during the run reaches them alike;
  idle us     CUDA events around the call on an idle GPU (synchronised
              before each call), so host time before the launch shows too;
  flushed us  the C bench's method (mla-tune bench: an L2 read-flush before
              each call, all calls queued, events around the call only):
              comparable with `mla-tune bench --heads H --batch B --seq-len L
              --no-ceilings`; host overhead hides behind the flush there.
The overhead of run is its host time minus the C call's (vLLM's form: minus
"C call, vLLM"); the last line prints them.

Stub mode (--stub; no GPU, no torch needed: CPU only) builds the stub
library of tests/stub and times the same paths on fake tensors (and on
torch CPU tensors when torch is installed), plus the stub's C loop: CPU
time of the thread per call, best of 20 batches (robust to other load).

Library: --library PATH, else $MLATUNE_LIBRARY, else the package's search.
"""

import argparse
import ctypes
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mlatune  # noqa: E402
from mlatune import plan as plan_module  # noqa: E402


def interleaved_median_ns(paths, calls, between=None, turn=100):
    """Median wall time per call in ns of each path's fn(), `calls` calls
    each, the paths taking turns of `turn` calls (`between`, if any, runs
    before each turn, outside the timing): a drift of the host while it
    runs (clock, other load) reaches every path alike, so the differences
    between paths are the paths'."""
    perf = time.perf_counter_ns
    times = {name: [] for name, _ in paths}
    for _ in range(max(1, calls // turn)):
        for name, fn in paths:
            if between is not None:
                between()
            own = times[name]
            for _ in range(turn):
                t0 = perf()
                fn()
                own.append(perf() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def cpu_ns(fn, calls, batches=20):
    """CPU time of the calling thread per fn() call in ns: the best of
    `batches` batches.  Used on the CPU (stub) where other processes share
    the cores: a preempted batch counts no time, a wall clock would."""
    clock = time.thread_time_ns
    per = max(1, calls // batches)
    best = None
    for _ in range(batches):
        t0 = clock()
        for _ in range(per):
            fn()
        t = (clock() - t0) / per
        best = t if best is None or t < best else best
    return best


def c_call(plan, packed, stream):
    """mlt_plan_run through ctypes with its arguments packed in advance."""
    run, handle = plan._mlt_run, plan._handle

    def call():
        if run(handle, packed, stream):
            plan._fail(run(handle, packed, stream))
    return call


def checked_every_call(plan, call):
    """call() with the plan's remembered layouts forgotten first: every
    check every call."""
    def forget_and_call():
        plan._last = None
        call()
    return forget_and_call


def layout_check(plan):
    """How the plan compares a call's layouts with its last call's (after
    a first torch call)."""
    if plan._make_guard is None:
        return ("no TensorGuards in this torch: layouts read in Python (the contiguous call checked, "
                "not remembered)")
    return "layouts compared by torch's TensorGuards"


# ----------------------------------------------------------------------
# GPU

def gpu(opts):
    import torch
    if not torch.cuda.is_available():
        sys.exit("bench_overhead: torch reports no CUDA device (use --stub on a host without a GPU)")
    dev = torch.device("cuda", opts.device)
    torch.cuda.set_device(dev)
    rt = mlatune.Runtime(device=opts.device, library=opts.library)
    n, page, b, length = opts.heads, opts.page_size, opts.batch, opts.seq_len
    plan = rt.plan(n, page_size=page, q_dtype="bfloat16", kv_dtype="bfloat16", softmax_scale=576 ** -0.5,
                   max_batch=max(b, 1))
    vplan = rt.plan(n, page_size=page, q_dtype="bfloat16", kv_dtype="bfloat16", softmax_scale=576 ** -0.5,
                    max_batch=max(b, 1), views=True)
    blocks = (length + page - 1) // page
    g = torch.Generator(device=dev).manual_seed(1)
    q = torch.randn((b, 1, n, 576), generator=g, device=dev).to(torch.bfloat16)
    kv = torch.randn((b * blocks, page, 576), generator=g, device=dev).to(torch.bfloat16)
    bt = torch.arange(b * blocks, dtype=torch.int32, device=dev).view(b, blocks)
    lens = torch.full((b,), length, dtype=torch.int32, device=dev)
    out = torch.empty((b, 1, n, 512), dtype=torch.bfloat16, device=dev)
    lse = torch.empty((b, 1, n), dtype=torch.float32, device=dev)
    ws = torch.empty((max(plan.workspace_size, vplan.workspace_size, 16),), dtype=torch.uint8, device=dev)
    # vLLM's form: ql_nope a transposed bmm output, q_pe a slice of rows of 192
    ql_nope = torch.empty((n, b, 512), dtype=torch.bfloat16, device=dev)
    ql_nope.copy_(q.view(b, n, 576)[..., :512].transpose(0, 1))
    pe_rows = torch.empty((b, n, 192), dtype=torch.bfloat16, device=dev)
    pe_rows[..., 128:] = q.view(b, n, 576)[..., 512:]
    pair = (ql_nope.transpose(0, 1), pe_rows[..., 128:])
    out_bn, lse_bn = out.view(b, n, 512), lse.view(b, n)  # vLLM's [B, N, ...] forms, made once
    k_scale = torch.ones((), dtype=torch.float32, device=dev)  # vLLM's layer._k_scale
    L = length  # the hints, passed as keywords as an engine passes them (a ** dict would cost its unpacking)
    stream = torch.cuda.current_stream().cuda_stream
    raw_args = (b, q.data_ptr(), kv.data_ptr(), bt.data_ptr(), lens.data_ptr(), out.data_ptr(), lse.data_ptr(),
                ws.data_ptr(), ws.numel(), blocks, length, length, 0, stream)
    packed = plan_module._ARGS.pack(b, length, blocks, q.data_ptr(), kv.data_ptr(), bt.data_ptr(),
                                    lens.data_ptr(), out.data_ptr(), lse.data_ptr(), ws.data_ptr(), ws.numel(),
                                    length, 0, *plan_module.NO_VIEWS)
    # the vLLM form's arguments as C gets them (views, the device scale)
    v = vplan._pointers(pair, kv, bt, lens, out_bn, lse_bn, ws, None, None, k_scale, None)[0]
    vpacked = plan_module._ARGS.pack(v[0], length, v[1], *v[2:10], length, v[10], *v[11])
    paths = [
        ("C call", c_call(plan, packed, stream)),
        ("run_raw", lambda: plan.run_raw(*raw_args)),
        ("run", lambda: plan.run(q, kv, bt, lens, out, lse, ws, seq_len_hint=L, max_seq_len_hint=L)),
        ("run, checked", checked_every_call(plan, lambda: plan.run(q, kv, bt, lens, out, lse, ws, seq_len_hint=L,
                                                                   max_seq_len_hint=L))),
        ("C call/views", c_call(vplan, packed, stream)),
        ("run_raw/views", lambda: vplan.run_raw(*raw_args)),
        ("run/views", lambda: vplan.run(q, kv, bt, lens, out, lse, ws, seq_len_hint=L, max_seq_len_hint=L)),
        ("C call, vLLM", c_call(vplan, vpacked, stream)),
        ("run/views, vLLM", lambda: vplan.run(pair, kv, bt, lens, out_bn, lse_bn, ws, kv_scale=k_scale,
                                              seq_len_hint=L, max_seq_len_hint=L)),
        ("vLLM, checked", checked_every_call(vplan, lambda: vplan.run(pair, kv, bt, lens, out_bn, lse_bn, ws,
                                                                      kv_scale=k_scale, seq_len_hint=L,
                                                                      max_seq_len_hint=L))),
    ]
    flush_buf = torch.empty((256 << 20) // 4, dtype=torch.float32, device=dev).fill_(1.0)
    sink = torch.empty((1,), dtype=torch.float32, device=dev)

    def flush():
        # reads 256 MiB (past the L2); the reduction's out= form differs
        # between torch versions, so the result is copied instead
        sink.copy_(flush_buf.sum().reshape(1))

    for name, fn in paths:  # the first calls: the plans' layouts and guards (once)
        fn()
    print(f"device: {torch.cuda.get_device_name(dev)} ({rt.arch}); libmlatune: {rt.library.path}; "
          f"torch {torch.__version__}; {layout_check(vplan)}")
    print(f"shape: heads {n}, batch {b}, seq_len {length}, page {page}, bf16; variant: "
          f"{plan.explain(b, length, length).variant} (views plan: {vplan.explain(b, length, length).variant})")
    print(f"{'path':16s} {'host us':>9s} {'idle us':>9s} {'flushed us':>11s}")
    for name, fn in paths:
        for _ in range(50):
            fn()
    torch.cuda.synchronize()
    results = {name: ns / 1e3 for name, ns in
               interleaved_median_ns(paths, opts.calls, between=torch.cuda.synchronize).items()}
    torch.cuda.synchronize()
    for name, fn in paths:
        host = results[name]
        idle = []
        for _ in range(opts.reps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            idle.append(e0.elapsed_time(e1) * 1e3)
        pairs = []
        for _ in range(opts.reps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            flush()
            e0.record()
            fn()
            e1.record()
            pairs.append((e0, e1))
        torch.cuda.synchronize()
        flushed = statistics.median(e0.elapsed_time(e1) * 1e3 for e0, e1 in pairs)
        print(f"{name:16s} {host:9.2f} {statistics.median(idle):9.2f} {flushed:11.2f}")
    print(f"run over the C call (host): {results['run'] - results['C call']:.2f} us; "
          f"run_raw over the C call: {results['run_raw'] - results['C call']:.2f} us; "
          f"on the views plan: {results['run/views'] - results['C call/views']:.2f} us, "
          f"{results['run_raw/views'] - results['C call/views']:.2f} us; "
          f"vLLM's form over its C call: {results['run/views, vLLM'] - results['C call, vLLM']:.2f} us "
          f"(every check every call: run {results['run, checked'] - results['C call']:.2f} us, "
          f"vLLM's form {results['vLLM, checked'] - results['C call, vLLM']:.2f} us)")
    print(f"C bench for comparison: mla-tune bench --heads {n} --batch {b} --seq-len {length} "
          f"--page-size {page} --no-ceilings")


# ----------------------------------------------------------------------
# stub (CPU)

def stub(opts):
    sys.path.insert(0, os.path.join(HERE, "tests"))
    import support
    lib = support.stub_library()
    if lib is None:
        sys.exit("bench_overhead --stub: needs a C compiler and mlatune.h")
    rt = mlatune.Runtime(library=lib)
    plan = rt.plan(opts.heads, page_size=opts.page_size, q_dtype="bfloat16", kv_dtype="bfloat16",
                   softmax_scale=576 ** -0.5, max_batch=max(opts.batch, 1))
    vplan = rt.plan(opts.heads, page_size=opts.page_size, q_dtype="bfloat16", kv_dtype="bfloat16",
                    softmax_scale=576 ** -0.5, max_batch=max(opts.batch, 1), views=True)
    fake = support.stub_call_args(plan, batch=opts.batch)
    blocks = fake["block_table"].shape[1]
    ptr = {k: v.ptr for k, v in fake.items()}
    wsb = plan.workspace_size
    raw_args = (opts.batch, ptr["q"], ptr["kv_cache"], ptr["block_table"], ptr["seq_lens"], ptr["out"], ptr["lse"],
                ptr["workspace"], wsb, blocks, opts.seq_len, opts.seq_len, 0, 0)
    packed = plan_module._ARGS.pack(opts.batch, opts.seq_len, blocks, ptr["q"], ptr["kv_cache"],
                                    ptr["block_table"], ptr["seq_lens"], ptr["out"], ptr["lse"], ptr["workspace"],
                                    wsb, opts.seq_len, 0, *plan_module.NO_VIEWS)
    hints = dict(seq_len_hint=opts.seq_len, max_seq_len_hint=opts.seq_len)
    fake_args = dict(fake, schedule=None)
    c_loop = lib._cdll.stub_time_runs(plan._handle, packed, None, 100000)
    rows = [("C loop (in C)", c_loop)]
    for name, fn in (("C call (ctypes)", c_call(plan, packed, 0)),
                     ("run_raw", lambda: plan.run_raw(*raw_args)),
                     ("run, CAI fakes", lambda: plan.run(**fake_args, **hints)),
                     ("run_raw/views", lambda: vplan.run_raw(*raw_args)),
                     ("run/views, CAI", lambda: vplan.run(**fake_args, **hints))):
        rows.append((name, cpu_ns(fn, opts.calls)))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        # CPU tensors say get_device() == -1: patched to 0 (the runtime's
        # device) so the fast path runs as it would on a GPU; streams faked
        torch.Tensor.get_device = lambda self: 0
        plan._streams = vplan._streams = type("NoStreams", (), {"current": staticmethod(lambda device: 0)})()
        t = {
            "q": torch.zeros((opts.batch, 1, opts.heads, 576), dtype=torch.bfloat16),
            "kv_cache": torch.zeros((16, opts.page_size, 576), dtype=torch.bfloat16),
            "block_table": torch.zeros((opts.batch, blocks), dtype=torch.int32),
            "seq_lens": torch.ones((opts.batch,), dtype=torch.int32),
            "out": torch.empty((opts.batch, 1, opts.heads, 512), dtype=torch.bfloat16),
            "lse": torch.empty((opts.batch, 1, opts.heads), dtype=torch.float32),
            "workspace": torch.empty((wsb,), dtype=torch.uint8),
        }
        rows.append(("run, torch CPU", cpu_ns(lambda: plan.run(**t, **hints), opts.calls)))
        rows.append(("run, checked", cpu_ns(checked_every_call(plan, lambda: plan.run(**t, **hints)), opts.calls)))
        rows.append(("run/views, torch", cpu_ns(lambda: vplan.run(**t, **hints), opts.calls)))
        # vLLM's form (C API 0.2), on the views plan: the q pair as views
        # (a transposed bmm output, a slice), the fp8 scale as a device tensor
        v = dict(t, q=(torch.zeros((opts.heads, opts.batch, 512), dtype=torch.bfloat16).transpose(0, 1),
                       torch.zeros((opts.batch, opts.heads, 192), dtype=torch.bfloat16)[..., 128:]),
                 out=t["out"].view(opts.batch, opts.heads, 512), lse=t["lse"].view(opts.batch, opts.heads))
        scale = torch.ones((), dtype=torch.float32)
        p = vplan._pointers(v["q"], v["kv_cache"], v["block_table"], v["seq_lens"], v["out"], v["lse"],
                            v["workspace"], None, None, scale, None)[0]
        vpacked = plan_module._ARGS.pack(p[0], opts.seq_len, p[1], *p[2:10], opts.seq_len, p[10], *p[11])
        rows.append(("C call, vLLM", cpu_ns(c_call(vplan, vpacked, 0), opts.calls)))
        rows.append(("run/views, vLLM", cpu_ns(lambda: vplan.run(**v, **hints, kv_scale=scale), opts.calls)))
        rows.append(("vLLM, checked", cpu_ns(checked_every_call(vplan, lambda: vplan.run(**v, **hints, kv_scale=scale)),
                                             opts.calls)))
    print(f"stub libmlatune (no GPU): heads {opts.heads}, batch {opts.batch}; Python {sys.version.split()[0]}"
          + (f", torch {torch.__version__}; {layout_check(plan)}" if torch is not None else ""))
    base = rows[1][1]
    for name, ns in rows:
        extra = f"  (+{(ns - base) / 1e3:.2f} us over the ctypes call)" if ns > base else ""
        print(f"  {name:20s} {ns / 1e3:7.2f} us{extra}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stub", action="store_true", help="CPU only: time against the stub library")
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--page-size", type=int, default=64)
    ap.add_argument("--calls", type=int, default=5000, help="calls per host-time median")
    ap.add_argument("--reps", type=int, default=200, help="calls per event-time median")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--library", default=None)
    opts = ap.parse_args()
    (stub if opts.stub else gpu)(opts)


if __name__ == "__main__":
    main()
