"""GPU tests of the package: results, CUDA graphs, the C path.

Need torch with CUDA and libmlatune ($MLATUNE_LIBRARY, else the package's
search); without torch or a CUDA device every test skips and says why.
When torch sees a GPU, a runtime that cannot be created is a failure, not
a skip.  ctest runs this file as python_gpu (run_gpu_tests.py, exit 77 when
skipped); the CPU run (python_cpu) sets MLATUNE_SKIP_GPU_TESTS.

  * results against a torch reference in float64 (pages gathered through
    the block table, causal among the Sq new tokens, natural-log LSE) for
    ragged lengths, lengths below Sq and 0, page sizes 1/16/64, bf16, fp16
    and fp8 KV with a scale, both q layouts, known and unknown hints;
  * torch.cuda.graph: a captured call (seq_len_hint=MLT_LENGTHS_UNKNOWN)
    replayed after seq_lens changes in place equals a direct call bit for
    bit, alone and with a step schedule shared by two layers;
  * the same inputs through a second runtime's plan called with raw
    pointers (run_raw) and through DeviceArray (no torch on the path) give
    the same bits as run() with torch tensors;
  * C API 0.2's views, on plans created with views=True: q as (ql_nope,
    q_pe) (slices of q, separate tensors, vLLM's transposed bmm output and
    slice), q as a slice of wider rows, out and lse as slices, lse heads
    first [B, N, Sq]: each equals the contiguous call bit for bit (with and
    without hints, so through the split and the single-pass variants), the
    contiguous call equals that of a plan without views, nothing is
    written outside the views, and a graph replays them; a plan created
    without views refuses the pair, in the package and in C;
  * the kv scale from a device tensor equals the same scale given to the
    plan, bit for bit, and a graph captured with it replays right after the
    tensor changes.
"""

import math
import os
import unittest

import support

import mlatune
from mlatune import LENGTHS_UNKNOWN

try:
    import torch
except ImportError:
    torch = None


def gpu_skip_reason():
    if os.environ.get("MLATUNE_SKIP_GPU_TESTS"):
        return "MLATUNE_SKIP_GPU_TESTS is set (the CPU run; ctest runs these as python_gpu)"
    if torch is None:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch reports no CUDA device"
    return None


SKIP = gpu_skip_reason()
_runtime = None


def runtime():
    """One runtime for the module, on torch's current device.  Failing to
    create it with a GPU present is an error."""
    global _runtime
    if _runtime is None:
        _runtime = mlatune.Runtime(device=torch.cuda.current_device(), library=os.environ.get("MLATUNE_LIBRARY"))
    return _runtime


def fp8_dtype():
    return getattr(torch, "float8_e4m3fn", None)


def reference(q, kv, block_table, seq_lens, sq, scale, kv_scale, dl):
    """out [B, Sq, N, Dl] and lse [B, Sq, N] in float64.  q [B, Sq, N, D],
    kv [pages, page, D] (fp8 read as its values, times kv_scale): token t
    of request b sees keys j < L - Sq + t + 1; none: out 0, lse -inf."""
    batch, _, n, d = q.shape
    page = kv.shape[1]
    out = torch.zeros((batch, sq, n, dl), dtype=torch.float64, device=q.device)
    lse = torch.full((batch, sq, n), -math.inf, dtype=torch.float64, device=q.device)
    for b in range(batch):
        length = int(seq_lens[b])
        if length == 0:
            continue
        pages = block_table[b, :(length + page - 1) // page].long()
        keys = kv[pages].reshape(-1, d)[:length].to(torch.float64) * kv_scale
        for t in range(sq):
            limit = length - sq + t + 1
            if limit <= 0:
                continue
            s = (q[b, t].to(torch.float64) @ keys[:limit].T) * scale  # [N, limit]
            lse[b, t] = torch.logsumexp(s, dim=-1)
            out[b, t] = torch.softmax(s, dim=-1) @ keys[:limit, :dl]
    return out, lse


class Problem:
    """Random inputs for one case, on the GPU."""

    def __init__(self, n, sq, page, q_dtype, kv_dtype, lens, kv_scale=1.0, extra_columns=1, seed=0):
        dev = torch.device("cuda", torch.cuda.current_device())
        g = torch.Generator(device=dev).manual_seed(seed)
        self.n, self.sq, self.page, self.lens = n, sq, page, list(lens)
        self.q_dtype, self.kv_dtype, self.kv_scale = q_dtype, kv_dtype, kv_scale
        self.batch = len(lens)
        self.scale = 576 ** -0.5
        blocks = max(1, max((L + page - 1) // page for L in lens)) + extra_columns
        pages = self.batch * blocks + 3
        self.q = torch.randn((self.batch, sq, n, 576), generator=g, device=dev).to(q_dtype)
        self.kv = torch.randn((pages, page, 576), generator=g, device=dev).to(kv_dtype)
        order = torch.randperm(pages, generator=g, device=dev)[:self.batch * blocks]
        self.block_table = order.to(torch.int32).view(self.batch, blocks).contiguous()
        self.seq_lens = torch.tensor(lens, dtype=torch.int32, device=dev)
        self.out = torch.full((self.batch, sq, n, 512), float("nan"), dtype=q_dtype, device=dev)
        self.lse = torch.full((self.batch, sq, n), float("nan"), dtype=torch.float32, device=dev)

    def plan(self, rt, max_batch=None, views=False):
        return rt.plan(self.n, sq=self.sq, page_size=self.page, q_dtype=self.q_dtype, kv_dtype=self.kv_dtype,
                       softmax_scale=self.scale, kv_scale=self.kv_scale, max_batch=max_batch or self.batch,
                       views=views)

    def hints(self):
        mean = sum(self.lens) // len(self.lens)
        return dict(seq_len_hint=mean, max_seq_len_hint=max(max(self.lens), mean))


def assert_close(test, p, out, lse, what):
    ref_out, ref_lse = reference(p.q, p.kv, p.block_table, p.seq_lens, p.sq, p.scale, p.kv_scale, 512)
    out = out.view(p.batch, p.sq, p.n, 512).to(torch.float64)
    lse = lse.view(p.batch, p.sq, p.n).to(torch.float64)
    test.assertFalse(torch.isnan(out).any().item(), f"{what}: NaN in out (a row not written?)")
    test.assertFalse(torch.isnan(lse).any().item(), f"{what}: NaN in lse")
    empty = torch.isinf(ref_lse)
    test.assertTrue(torch.equal(torch.isinf(lse), empty), f"{what}: -inf rows differ from the reference")
    test.assertTrue((lse[empty] < 0).all().item(), f"{what}: an empty row's lse is not -inf")
    test.assertEqual(out[empty].abs().max().item() if empty.any() else 0.0, 0.0, f"{what}: empty rows not zero")
    tol = 2e-2 if p.q_dtype == torch.bfloat16 else 1e-2
    err = (out - ref_out).abs().max().item() / max(ref_out.abs().max().item(), 1e-6)
    test.assertLess(err, tol, f"{what}: out relative error {err:.3g}")
    if (~empty).any():
        lerr = ((lse - ref_lse).abs() / ref_lse.abs().clamp(min=1.0))[~empty].max().item()
        test.assertLess(lerr, tol, f"{what}: lse relative error {lerr:.3g}")


def same_bits(a, b):
    """Bitwise equality (NaN and -0.0 included)."""
    view = {2: torch.int16, 4: torch.int32, 1: torch.uint8}[a.element_size()]
    return torch.equal(a.contiguous().view(view), b.contiguous().view(view))


def untouched(t):
    """Whether every element of t still holds the NaN it was filled with."""
    return same_bits(t, torch.full_like(t, float("nan")))


def capture(fn):
    """A CUDA graph of fn(), after a warm-up on a side stream (as torch
    recommends)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


@unittest.skipIf(SKIP, SKIP or "")
class ResultsTest(unittest.TestCase):

    def check_case(self, p, kv_arg=None, token_major=False):
        rt = runtime()
        plan = p.plan(rt)
        ws = torch.empty((max(plan.workspace_size, 16),), dtype=torch.uint8, device=p.q.device)
        kv = p.kv if kv_arg is None else kv_arg
        q, out, lse = p.q, p.out, p.lse
        if token_major:
            q, out, lse = q.view(-1, p.n, 576), out.view(-1, p.n, 512), lse.view(-1, p.n)
        for hints in ({}, p.hints()):
            out.fill_(float("nan"))
            lse.fill_(float("nan"))
            plan.run(q, kv, p.block_table, p.seq_lens, out, lse, ws, **hints)
            torch.cuda.synchronize()
            choice = plan.explain(p.batch, **hints)
            assert_close(self, p, out, lse, f"lens {p.lens}, hints {hints or 'unknown'} ({choice.variant})")

    def test_uniform_page_64(self):
        self.check_case(Problem(16, 1, 64, torch.bfloat16, torch.bfloat16, [1000] * 4))

    def test_ragged_page_1_many_heads(self):
        self.check_case(Problem(128, 1, 1, torch.bfloat16, torch.bfloat16, [1, 77], seed=1))

    def test_fewer_keys_than_sq_page_16_fp16(self):
        self.check_case(Problem(16, 2, 16, torch.float16, torch.float16, [1, 17, 300], seed=2))

    def test_length_zero(self):
        self.check_case(Problem(16, 1, 64, torch.bfloat16, torch.bfloat16, [0, 50, 0], seed=3))

    def test_token_major_sq_4(self):
        self.check_case(Problem(16, 4, 16, torch.bfloat16, torch.bfloat16, [4, 100, 2500], seed=4), token_major=True)

    def test_fp8_kv_with_scale(self):
        if fp8_dtype() is None:
            self.skipTest(f"torch {torch.__version__} has no float8_e4m3fn")
        p = Problem(8, 1, 64, torch.bfloat16, fp8_dtype(), [5, 3000, 129, 64, 700], kv_scale=0.5, seed=5)
        self.check_case(p)
        self.check_case(p, kv_arg=p.kv.view(torch.uint8))  # vLLM stores the fp8 cache as bytes

    def test_fp8_kv_fp16_q_long_tail(self):
        if fp8_dtype() is None:
            self.skipTest(f"torch {torch.__version__} has no float8_e4m3fn")
        self.check_case(Problem(64, 1, 16, torch.float16, fp8_dtype(), [2048] * 2 + [10] * 6, kv_scale=2.0, seed=6))

    def test_refusals_on_the_gpu(self):
        p = Problem(16, 1, 64, torch.bfloat16, torch.bfloat16, [10, 20], seed=7)
        plan = p.plan(runtime())
        ws = torch.empty((max(plan.workspace_size, 16),), dtype=torch.uint8, device=p.q.device)
        with self.assertRaises(mlatune.Error) as cm:
            plan.run(p.q.cpu(), p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws)
        self.assertEqual(cm.exception.message, f"q: on cpu, expected cuda:{runtime().device} (the runtime's device)")
        with self.assertRaises(mlatune.Error) as cm:
            plan.run(p.q.half(), p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws)
        self.assertEqual(cm.exception.message, "q: expected dtype bfloat16, got float16")
        # a view the C API cannot take is refused, naming it, before C
        wide = torch.zeros((p.batch, 1, 16, 580), dtype=torch.bfloat16, device=p.q.device)
        with self.assertRaises(mlatune.Error) as cm:
            plan.run(wide[..., :576], p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws)
        self.assertTrue(cm.exception.message.startswith("q: stride per head is 580 elements"), cm.exception.message)
        # what only C checks (run_raw checks nothing) comes back with C's message
        vplan = p.plan(runtime(), views=True)
        ws = torch.empty((max(plan.workspace_size, vplan.workspace_size, 16),), dtype=torch.uint8, device=p.q.device)
        with self.assertRaises(mlatune.Error) as cm:
            vplan.run_raw(p.batch, p.q.data_ptr(), p.kv.data_ptr(), p.block_table.data_ptr(), p.seq_lens.data_ptr(),
                         p.out.data_ptr(), p.lse.data_ptr(), ws.data_ptr(), ws.numel(), p.block_table.shape[1],
                         out_strides=(0, 0, 512))
        self.assertEqual(cm.exception.status, mlatune.Status.ERR_INVALID_ARGUMENT)
        self.assertTrue(cm.exception.message.startswith("mla_decode: out strides (0, 0, 512 per request, token, "
                                                        "head) make rows overlap"), cm.exception.message)


@unittest.skipIf(SKIP, SKIP or "")
class GraphTest(unittest.TestCase):
    """Capture with seq_len_hint=MLT_LENGTHS_UNKNOWN; change seq_lens in
    place; replay; compare with a direct call, bit for bit."""

    LENGTH_SETS = ([2000] * 8, [1, 5, 2048, 17, 64, 64, 900, 3], [0] * 7 + [2048], [300] * 8)

    def setUp(self):
        # block table [8, 32]: room for the longest length of LENGTH_SETS (2048 keys)
        self.p = Problem(16, 1, 64, torch.bfloat16, torch.bfloat16, [2048] * 8, extra_columns=0, seed=8)
        self.plan = self.p.plan(runtime())
        dev = self.p.q.device
        self.ws = torch.empty((max(self.plan.workspace_size, 16),), dtype=torch.uint8, device=dev)

    def capture(self, fn):
        return capture(fn)

    def test_replay_equals_direct_call(self):
        p, plan, ws = self.p, self.plan, self.ws
        self.assertTrue(plan.explain(p.batch).length_aware, "an unknown-length call should run a length-aware variant")
        out_g, lse_g = torch.empty_like(p.out), torch.empty_like(p.lse)
        graph = self.capture(lambda: plan.run(p.q, p.kv, p.block_table, p.seq_lens, out_g, lse_g, ws,
                                              seq_len_hint=LENGTHS_UNKNOWN))
        for lens in self.LENGTH_SETS:
            p.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
            p.lens = lens
            out_g.fill_(float("nan"))
            graph.replay()
            p.out.fill_(float("nan"))
            plan.run(p.q, p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws, seq_len_hint=LENGTHS_UNKNOWN)
            torch.cuda.synchronize()
            self.assertTrue(same_bits(out_g, p.out), f"out: replay differs from the direct call for {lens}")
            self.assertTrue(same_bits(lse_g, p.lse), f"lse: replay differs from the direct call for {lens}")
            assert_close(self, p, out_g, lse_g, f"replay for {lens}")

    def test_step_schedule_shared_by_two_layers(self):
        p, plan, ws = self.p, self.plan, self.ws
        if plan.schedule_size == 0:
            self.skipTest("this plan has no length-aware variant (schedule_size 0)")
        dev = p.q.device
        sched = torch.empty((plan.schedule_size,), dtype=torch.uint8, device=dev)
        kv2 = torch.randn_like(p.kv, dtype=torch.float32).to(p.kv.dtype)  # a second layer's cache
        outs = [torch.empty_like(p.out) for _ in range(4)]
        lses = [torch.empty_like(p.lse) for _ in range(4)]

        def step(o, l):
            plan.build_schedule(p.q, p.kv, p.block_table, p.seq_lens, o[0], l[0], ws, sched)
            plan.run(p.q, p.kv, p.block_table, p.seq_lens, o[0], l[0], ws, schedule=sched)
            plan.run(p.q, kv2, p.block_table, p.seq_lens, o[1], l[1], ws, schedule=sched)

        graph = self.capture(lambda: step(outs[:2], lses[:2]))
        for lens in self.LENGTH_SETS:
            p.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
            graph.replay()
            step(outs[2:], lses[2:])
            torch.cuda.synchronize()
            for i in range(2):
                self.assertTrue(same_bits(outs[i], outs[2 + i]), f"layer {i} out: replay differs for {lens}")
                self.assertTrue(same_bits(lses[i], lses[2 + i]), f"layer {i} lse: replay differs for {lens}")
            p.lens = lens
            assert_close(self, p, outs[0], lses[0], f"scheduled replay for {lens}")
            # the schedule-less call gives the same bits as the scheduled one
            plan.run(p.q, p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws)
            torch.cuda.synchronize()
            self.assertTrue(same_bits(p.out, outs[0]), f"schedule vs no schedule differ for {lens}")


def vllm_pair(p):
    """q as vLLM hands it over: ql_nope [T, N, 512] a transposed bmm output
    (heads outermost in memory), q_pe [T, N, 64] the last columns of rows
    of 192; T = B * Sq.  Both hold p.q's values."""
    tokens = p.batch * p.sq
    q3 = p.q.reshape(tokens, p.n, 576)
    nope_store = torch.empty((p.n, tokens, 512), dtype=p.q.dtype, device=p.q.device)
    nope_store.copy_(q3[..., :512].transpose(0, 1))
    pe_store = torch.full((tokens, p.n, 192), float("nan"), dtype=p.q.dtype, device=p.q.device)
    pe_store[..., 128:] = q3[..., 512:]
    return nope_store.transpose(0, 1), pe_store[..., 128:]


@unittest.skipIf(SKIP, SKIP or "")
class ViewsTest(unittest.TestCase):
    """The same inputs through every form of call C API 0.2 takes, against
    the contiguous call, bit for bit."""

    def forms(self, p):
        """(name, run's q, out, lse arguments, lse_layout, and a function of
        the outputs written that returns (out as [B, Sq, N, Dl], lse as
        [B, Sq, N], whether nothing outside the views was written))."""
        b, sq, n, dev, dt = p.batch, p.sq, p.n, p.q.device, p.q_dtype
        nan = float("nan")

        def plain():
            return torch.full_like(p.out, nan), torch.full_like(p.lse, nan)

        def same(o, l):
            return lambda: (o, l, True)

        forms = []
        o, l = plain()
        forms.append(("pair of q's slices", (p.q[..., :512], p.q[..., 512:]), o, l, None, same(o, l)))
        o, l = plain()
        forms.append(("pair of separate tensors", (p.q[..., :512].contiguous(), p.q[..., 512:].contiguous()), o, l,
                      None, same(o, l)))
        o, l = plain()
        forms.append(("vLLM's pair", vllm_pair(p), o, l, None, same(o, l)))
        wide_q = torch.full((b, sq, n, 640), nan, dtype=dt, device=dev)
        wide_q[..., 32:608] = p.q
        o, l = plain()
        forms.append(("q columns 32..607 of rows of 640", wide_q[..., 32:608], o, l, None, same(o, l)))
        out_big = torch.full((b, sq, n, 1024), nan, dtype=dt, device=dev)
        lse_big = torch.full((b, sq, n + 8), nan, dtype=torch.float32, device=dev)
        forms.append(("out columns 256..767 of rows of 1024, lse a slice", p.q, out_big[..., 256:768],
                      lse_big[..., 4:4 + n], None,
                      lambda: (out_big[..., 256:768], lse_big[..., 4:4 + n],
                               untouched(out_big[..., :256]) and untouched(out_big[..., 768:])
                               and untouched(lse_big[..., :4]) and untouched(lse_big[..., 4 + n:]))))
        o = torch.full_like(p.out, nan)
        lse_hf = torch.full((b, n, sq), nan, dtype=torch.float32, device=dev)
        forms.append(("lse heads first [B, N, Sq]", p.q, o, lse_hf, "heads_first",
                      lambda: (o, lse_hf.transpose(1, 2), True)))
        out_tok = torch.full((b * sq, n, 1024), nan, dtype=dt, device=dev)
        lse_hf2 = torch.full((b, n, sq), nan, dtype=torch.float32, device=dev)
        forms.append(("all at once: vLLM's pair, token-major out slice, lse heads first", vllm_pair(p),
                      out_tok[..., 512:], lse_hf2, "heads_first",
                      lambda: (out_tok[..., 512:].reshape(b, sq, n, 512), lse_hf2.transpose(1, 2),
                               untouched(out_tok[..., :512]))))
        return forms

    def check_views(self, p):
        rt = runtime()
        plan = p.plan(rt, views=True)
        plain = p.plan(rt)  # without views: the contiguous kernels
        ws = torch.empty((max(plan.workspace_size, plain.workspace_size, 16),), dtype=torch.uint8, device=p.q.device)
        for hints in ({}, p.hints()):
            variant = plan.explain(p.batch, **hints).variant
            p.out.fill_(float("nan"))
            p.lse.fill_(float("nan"))
            plan.run(p.q, p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws, **hints)
            torch.cuda.synchronize()
            assert_close(self, p, p.out, p.lse, f"contiguous, hints {hints or 'unknown'} ({variant})")
            if plain.explain(p.batch, **hints).variant == variant:
                out, lse = torch.full_like(p.out, float("nan")), torch.full_like(p.lse, float("nan"))
                plain.run(p.q, p.kv, p.block_table, p.seq_lens, out, lse, ws, **hints)
                torch.cuda.synchronize()
                self.assertTrue(same_bits(out, p.out) and same_bits(lse, p.lse),
                                f"hints {hints or 'unknown'} ({variant}): the plan without views differs")
            for name, q, out, lse, layout, written in self.forms(p):
                what = f"{name}, lens {p.lens}, hints {hints or 'unknown'} ({variant})"
                plan.run(q, p.kv, p.block_table, p.seq_lens, out, lse, ws, lse_layout=layout, **hints)
                torch.cuda.synchronize()
                got_out, got_lse, clean = written()
                self.assertTrue(same_bits(got_out.reshape(p.out.shape), p.out), f"{what}: out differs")
                self.assertTrue(same_bits(got_lse.reshape(p.lse.shape), p.lse), f"{what}: lse differs")
                self.assertTrue(clean, f"{what}: written outside the views")

    def test_sq_1_page_64(self):
        self.check_views(Problem(16, 1, 64, torch.bfloat16, torch.bfloat16, [1000, 5, 300, 2048], seed=20))

    def test_sq_2_fp16_page_16(self):
        self.check_views(Problem(16, 2, 16, torch.float16, torch.float16, [1, 17, 300], seed=21))

    def test_many_heads_sq_4(self):
        self.check_views(Problem(128, 4, 64, torch.bfloat16, torch.bfloat16, [4, 700, 3000], seed=22))

    def test_plan_without_views_refuses_the_pair(self):
        p = Problem(16, 1, 64, torch.bfloat16, torch.bfloat16, [700, 33, 2000], seed=24)
        plan, vplan = p.plan(runtime()), p.plan(runtime(), views=True)
        self.assertEqual((plan.problem.views, vplan.problem.views), (False, True))
        ws = torch.empty((max(plan.workspace_size, vplan.workspace_size, 16),), dtype=torch.uint8, device=p.q.device)
        pair = vllm_pair(p)
        # the parts' (request, token, head) strides: [B*Sq, N, W] with Sq = 1
        nope_st, pe_st = ((t.stride(0), t.stride(0), t.stride(1)) for t in pair)
        with self.assertRaises(mlatune.Error) as cm:
            plan.run(pair, p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws)
        self.assertEqual(cm.exception.status, mlatune.Status.ERR_INVALID_ARGUMENT)
        self.assertEqual(cm.exception.message,
                         "q: the pair (ql_nope, q_pe) cannot be passed to this plan: it was created with views=False "
                         "(its kernels were built for contiguous tensors only); create the plan with views=True "
                         "(Runtime.plan(..., views=True)), or pass q as one [B, Sq, N, 576] tensor")
        # past the package (run_raw refuses too), mlt_plan_run itself refuses
        with self.assertRaises(mlatune.Error) as cm:
            plan.run_raw(p.batch, pair[0].data_ptr(), p.kv.data_ptr(), p.block_table.data_ptr(),
                         p.seq_lens.data_ptr(), p.out.data_ptr(), p.lse.data_ptr(), ws.data_ptr(), ws.numel(),
                         p.block_table.shape[1], q_pe=pair[1].data_ptr(), q_strides=nope_st, q_pe_strides=pe_st)
        self.assertTrue(cm.exception.message.startswith("run_raw: q_pe, q_strides, q_pe_strides cannot be passed"),
                        cm.exception.message)
        from mlatune.plan import _ARGS
        args = _ARGS.pack(p.batch, LENGTHS_UNKNOWN, p.block_table.shape[1], pair[0].data_ptr(), p.kv.data_ptr(),
                          p.block_table.data_ptr(), p.seq_lens.data_ptr(), p.out.data_ptr(), p.lse.data_ptr(),
                          ws.data_ptr(), ws.numel(), 0, 0, pair[1].data_ptr(), *nope_st, *pe_st, 0, 0, 0, 0, 0, 0, 0)
        lib = plan.runtime.library
        self.assertEqual(lib.mlt_plan_run(plan._handle, args, torch.cuda.current_stream().cuda_stream),
                         mlatune.Status.ERR_INVALID_ARGUMENT)
        self.assertIn("but its kernels were built for contiguous tensors only: create the plan with views = 1",
                      lib.last_error())
        # the same call on a plan with views runs, right
        vplan.run(pair, p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws)
        torch.cuda.synchronize()
        assert_close(self, p, p.out, p.lse, "the pair on a plan with views")

    def test_graph_with_views(self):
        p = Problem(16, 1, 64, torch.bfloat16, torch.bfloat16, [2048] * 8, extra_columns=0, seed=23)
        plan = p.plan(runtime(), views=True)
        ws = torch.empty((max(plan.workspace_size, 16),), dtype=torch.uint8, device=p.q.device)
        pair = vllm_pair(p)
        out_tok = torch.full((p.batch, p.n, 1024), float("nan"), dtype=p.q_dtype, device=p.q.device)
        lse_hf = torch.empty((p.batch, p.n, 1), dtype=torch.float32, device=p.q.device)
        graph = capture(lambda: plan.run(pair, p.kv, p.block_table, p.seq_lens, out_tok[..., 512:], lse_hf, ws,
                                         lse_layout="heads_first"))
        for lens in GraphTest.LENGTH_SETS:
            p.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
            graph.replay()
            plan.run(p.q, p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws)
            torch.cuda.synchronize()
            self.assertTrue(same_bits(out_tok[..., 512:].reshape(p.out.shape), p.out), f"out: replay differs, {lens}")
            self.assertTrue(same_bits(lse_hf.reshape(p.lse.shape), p.lse), f"lse: replay differs, {lens}")
            self.assertTrue(untouched(out_tok[..., :512]), f"replay wrote outside out, {lens}")


@unittest.skipIf(SKIP, SKIP or "")
class KvScaleTest(unittest.TestCase):
    """run(kv_scale=tensor): the scale read from device memory."""

    def kv_dtypes(self):
        return [torch.bfloat16] + ([fp8_dtype()] if fp8_dtype() is not None else [])

    def test_device_scale_equals_plan_scale(self):
        rt = runtime()
        for kv_dtype in self.kv_dtypes():
            p = Problem(16, 1, 64, torch.bfloat16, kv_dtype, [700, 33, 2000, 64], kv_scale=0.5, seed=30)
            plan_s = p.plan(rt, views=True)                       # 0.5 given to the plan
            plan_1 = rt.plan(p.n, sq=p.sq, page_size=p.page, q_dtype=p.q_dtype, kv_dtype=kv_dtype,
                             softmax_scale=p.scale, kv_scale=1.0, max_batch=p.batch, views=True)
            ws = torch.empty((max(plan_s.workspace_size, plan_1.workspace_size, 16),), dtype=torch.uint8,
                             device=p.q.device)
            scale = torch.tensor(0.5, dtype=torch.float32, device=p.q.device)
            for hints in ({}, p.hints()):
                what = f"{kv_dtype}, hints {hints or 'unknown'}"
                self.assertEqual(plan_s.explain(p.batch, **hints).variant, plan_1.explain(p.batch, **hints).variant,
                                 f"{what}: the two plans pick different variants: bits not comparable")
                results = []
                for plan, kv_scale in ((plan_s, None), (plan_1, scale), (plan_s, scale)):
                    out, lse = torch.full_like(p.out, float("nan")), torch.full_like(p.lse, float("nan"))
                    plan.run(p.q, p.kv, p.block_table, p.seq_lens, out, lse, ws, kv_scale=kv_scale, **hints)
                    results.append((out, lse))
                torch.cuda.synchronize()
                assert_close(self, p, *results[0], what)
                for i, form in ((1, "device scale on a plan of scale 1"), (2, "device scale on the plan of 0.5")):
                    self.assertTrue(same_bits(results[i][0], results[0][0]) and same_bits(results[i][1], results[0][1]),
                                    f"{what}: {form} differs from the plan's scale")

    def test_graph_follows_the_scale(self):
        rt = runtime()
        kv_dtype = self.kv_dtypes()[-1]
        p = Problem(16, 1, 64, torch.bfloat16, kv_dtype, [2048] * 4, extra_columns=0, seed=31)
        plans = {}

        def plan_of(value, views=False):
            if (value, views) not in plans:
                plans[value, views] = rt.plan(p.n, sq=p.sq, page_size=p.page, q_dtype=p.q_dtype, kv_dtype=kv_dtype,
                                              softmax_scale=p.scale, kv_scale=value, max_batch=p.batch, views=views)
            return plans[value, views]
        for value in (0.5, 0.25, 2.0):  # all plans made before capture
            plan_of(value)
        plan = plan_of(1.0, views=True)  # the scale tensor is a view
        for value in (0.5, 0.25, 2.0):
            self.assertEqual(plan.explain(p.batch).variant, plan_of(value).explain(p.batch).variant,
                             "the plans pick different variants: bits not comparable")
        ws = torch.empty((max(pl.workspace_size for pl in plans.values()) + 16,), dtype=torch.uint8,
                         device=p.q.device)
        scale = torch.tensor(0.5, dtype=torch.float32, device=p.q.device)
        out_g, lse_g = torch.empty_like(p.out), torch.empty_like(p.lse)
        graph = capture(lambda: plan.run(p.q, p.kv, p.block_table, p.seq_lens, out_g, lse_g, ws, kv_scale=scale))
        previous = None
        for value, lens in ((0.5, [2048, 5, 700, 64]), (0.25, [2048, 5, 700, 64]), (2.0, [1, 2048, 2048, 30])):
            scale.fill_(value)
            p.seq_lens.copy_(torch.tensor(lens, dtype=torch.int32))
            out_g.fill_(float("nan"))
            graph.replay()
            plan_of(value).run(p.q, p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws)
            torch.cuda.synchronize()
            self.assertTrue(same_bits(out_g, p.out) and same_bits(lse_g, p.lse),
                            f"replay with the scale {value} differs from a plan of scale {value}")
            p.lens, p.kv_scale = lens, value
            assert_close(self, p, out_g, lse_g, f"replay with the scale {value}")
            if previous is not None:
                self.assertFalse(same_bits(out_g, previous), f"the replay did not follow the scale to {value}")
            previous = out_g.clone()


@unittest.skipIf(SKIP, SKIP or "")
class CPathTest(unittest.TestCase):
    """run() on torch tensors == run_raw() on a second runtime's plan ==
    run() on DeviceArrays, bit for bit."""

    def test_same_bits_three_ways(self):
        p = Problem(16, 1, 64, torch.bfloat16, torch.bfloat16, [700, 33, 4000], seed=9)
        rt1 = runtime()
        rt2 = mlatune.Runtime(device=rt1.device, library=rt1.library)
        plan1, plan2 = p.plan(rt1), p.plan(rt2)
        self.assertEqual(plan1.explain(3, **p.hints()), plan2.explain(3, **p.hints()))
        dev = p.q.device
        ws = torch.empty((max(plan1.workspace_size, 16),), dtype=torch.uint8, device=dev)
        hints = p.hints()
        plan1.run(p.q, p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws, **hints)
        out2, lse2 = torch.full_like(p.out, float("nan")), torch.full_like(p.lse, float("nan"))
        stream = torch.cuda.current_stream().cuda_stream
        plan2.run_raw(p.batch, p.q.data_ptr(), p.kv.data_ptr(), p.block_table.data_ptr(), p.seq_lens.data_ptr(),
                      out2.data_ptr(), lse2.data_ptr(), ws.data_ptr(), ws.numel(), p.block_table.shape[1],
                      hints["seq_len_hint"], hints["max_seq_len_hint"], 0, stream)
        out3, lse3 = torch.full_like(p.out, float("nan")), torch.full_like(p.lse, float("nan"))
        d = rt1.device

        def arr(t, name):
            return mlatune.DeviceArray(t.data_ptr(), tuple(t.shape), name, device=d)
        plan1.run(arr(p.q, "bfloat16"), arr(p.kv, "bfloat16"), arr(p.block_table, "int32"), arr(p.seq_lens, "int32"),
                  arr(out3, "bfloat16"), arr(lse3, "float32"), arr(ws, "uint8"), stream=stream, **hints)
        torch.cuda.synchronize()
        assert_close(self, p, p.out, p.lse, "run")
        self.assertTrue(same_bits(p.out, out2) and same_bits(p.lse, lse2), "run_raw on a second runtime differs")
        self.assertTrue(same_bits(p.out, out3) and same_bits(p.lse, lse3), "DeviceArray path differs")
        rt2.close()


@unittest.skipIf(SKIP, SKIP or "")
class RememberedLayoutTest(unittest.TestCase):
    """run()'s remembered layouts (_layouts.py) on CUDA tensors: where
    torch has TensorGuards, they are what compares the layouts; a call of
    the same layouts (new out and lse: new pointers) gives the checked
    call's bits; tensors changed in place after a good call are refused or
    run with their new storage."""

    def test_same_layouts_new_pointers_and_changes_in_place(self):
        p = Problem(16, 1, 64, torch.bfloat16, torch.bfloat16, [700, 33, 4000], seed=10)
        plan = p.plan(runtime())
        ws = torch.empty((max(plan.workspace_size, 16),), dtype=torch.uint8, device=p.q.device)
        checked = []
        remember = type(plan)._remember.__get__(plan)
        plan._remember = lambda *args: checked.append(1) or remember(*args)
        hints = p.hints()
        plan.run(p.q, p.kv, p.block_table, p.seq_lens, p.out, p.lse, ws, **hints)
        if plan._make_guard is None:  # no guards: the contiguous call is checked every call, never remembered
            has = getattr(getattr(getattr(torch._C, "_dynamo", None), "guards", None), "TensorGuards", None)
            self.assertIsNone(has, f"torch {torch.__version__} has TensorGuards but run() does not use them")
            self.skipTest(f"torch {torch.__version__} has no TensorGuards: layouts read in Python")
        self.assertIsNotNone(plan._last.guard)
        out2, lse2 = torch.full_like(p.out, float("nan")), torch.full_like(p.lse, float("nan"))
        plan.run(p.q, p.kv, p.block_table, p.seq_lens, out2, lse2, ws, **hints)
        self.assertEqual(len(checked), 1, "a call of the same layouts was checked again")
        torch.cuda.synchronize()
        assert_close(self, p, p.out, p.lse, "checked call")
        self.assertTrue(same_bits(p.out, out2) and same_bits(p.lse, lse2), "the remembered call differs")
        # `.data =` another dtype: pointer, shape, strides and _version unchanged
        p.seq_lens.data = p.seq_lens.view(torch.float32)
        with self.assertRaises(mlatune.Error) as cm:
            plan.run(p.q, p.kv, p.block_table, p.seq_lens, out2, lse2, ws, **hints)
        self.assertEqual(cm.exception.message, "seq_lens: expected dtype int32, got float32")
        p.seq_lens.data = p.seq_lens.view(torch.int32)
        # resize_ (leaves _version as it was)
        p.q.resize_(p.batch, 1, 16, 512)
        with self.assertRaises(mlatune.Error) as cm:
            plan.run(p.q, p.kv, p.block_table, p.seq_lens, out2, lse2, ws, **hints)
        self.assertTrue(cm.exception.message.startswith("q: expected shape"), cm.exception.message)
        p.q.resize_(p.batch, 1, 16, 576)
        # set_ to new storage: the call writes there
        out2.set_(torch.full_like(p.out, float("nan")))
        plan.run(p.q, p.kv, p.block_table, p.seq_lens, out2, lse2, ws, **hints)
        torch.cuda.synchronize()
        self.assertTrue(same_bits(p.out, out2), "set_ storage: the call did not write the new storage")


@unittest.skipIf(SKIP, SKIP or "")
class VllmExampleTest(unittest.TestCase):
    """examples/vllm_backend.py: both q forms (the pair contiguous and as
    views), bf16 and fp8 caches, the fp8 scale from layer._k_scale."""

    def setUp(self):
        import importlib.util
        path = os.path.join(support.PYTHON_DIR, "examples", "vllm_backend.py")
        spec = importlib.util.spec_from_file_location("vllm_backend", path)
        self.ex = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.ex)

    def forward(self, impl, p, kv, layer, q):
        meta = self.ex.AttnMetadata(num_decodes=p.batch, num_decode_tokens=p.batch * p.sq,
                                    decode=self.ex.DecodeMetadata(block_table=p.block_table, seq_lens=p.seq_lens,
                                                                  max_seq_len=max(p.lens)))
        return impl.forward_mqa(q, kv, meta, layer)

    def check(self, kv_cache_dtype, kv_dtype, kv_scale):
        p = Problem(16, 1, 64, torch.bfloat16, kv_dtype, [5, 900, 64], kv_scale=kv_scale, seed=10)
        impl = self.ex.MlaTuneDecodeImpl(num_heads=16, scale=p.scale, kv_cache_dtype=kv_cache_dtype, block_size=64,
                                         max_num_seqs=8, runtime=runtime())
        self.assertTrue(all(plan.problem.views for plan in impl._plans.values()), "the example's plans need views")
        kv = p.kv.view(torch.uint8) if kv_cache_dtype == "fp8" else p.kv
        layer = self.ex.Layer(k_scale=kv_scale, device=p.q.device)
        q3 = p.q.view(p.batch, 16, 576)
        out, lse = self.forward(impl, p, kv, layer, q3)
        torch.cuda.synchronize()
        self.assertEqual(tuple(out.shape), (p.batch, 16, 512))
        self.assertEqual(tuple(lse.shape), (p.batch, 16))
        assert_close(self, p, out, lse, f"example, {kv_cache_dtype}")
        for form, pair in (("contiguous parts", (q3[..., :512].contiguous(), q3[..., 512:].contiguous())),
                           ("views of q", (q3[..., :512], q3[..., 512:])), ("vLLM's views", vllm_pair(p))):
            out2, lse2 = self.forward(impl, p, kv, layer, pair)
            torch.cuda.synchronize()
            self.assertTrue(same_bits(out, out2) and same_bits(lse, lse2), f"the pair form ({form}) differs")
        if kv_cache_dtype == "fp8":
            # the scale is the layer's device tensor: one plan, and a new
            # value is read by the next call
            self.assertEqual(list(impl._plans), [(1, 1.0)])
            layer._k_scale.fill_(kv_scale * 2)
            out3, _ = self.forward(impl, p, kv, layer, q3)
            torch.cuda.synchronize()
            self.assertFalse(same_bits(out, out3), "a new layer._k_scale was not read")

    def test_bf16_cache(self):
        self.check("auto", torch.bfloat16, 1.0)

    def test_fp8_cache(self):
        if fp8_dtype() is None:
            self.skipTest(f"torch {torch.__version__} has no float8_e4m3fn")
        self.check("fp8", fp8_dtype(), 0.25)


@unittest.skipIf(SKIP, SKIP or "")
class ReadmeTest(unittest.TestCase):
    """python/README.md's ```python blocks run as written, in order, in one
    namespace (the graph block continues the example)."""

    def test_readme_examples_run(self):
        import contextlib
        import io
        import re
        with open(os.path.join(support.PYTHON_DIR, "README.md")) as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        self.assertGreaterEqual(len(blocks), 3, "README.md lost its example blocks")
        namespace = {"__name__": "readme"}
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            for block in blocks:
                exec(compile(block, "README.md", "exec"), namespace)
        text = printed.getvalue()
        errors = [float(x) for x in re.findall(r"largest error: (\S+) (\S+)", text)[0]]
        self.assertLess(max(errors), 5e-2, text)
        self.assertIn("replay == direct call: True", text)
        self.assertIn("views == contiguous: True True", text)


if __name__ == "__main__":
    unittest.main()
