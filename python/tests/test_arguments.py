"""Argument checking and what reaches C, against the stub libmlatune.

The stub (tests/stub/stub_mlatune.c) records what each call was given, so
these tests check both sides: a refused call names the argument and never
reaches C; an accepted one hands C exactly the pointers, sizes, hints and
stream it was given.  Tensors are FakeCudaArrays (__cuda_array_interface__
over made-up addresses): no GPU, no torch.
"""

import ctypes
import unittest

import support
from support import FakeCudaArray

import mlatune
from mlatune import LENGTHS_UNKNOWN, Status


def _args_of(lib):
    return lib._cdll.stub_last_args().contents


class StubCase(unittest.TestCase):
    """A runtime and a bf16 plan (16 heads, Sq 2, page 64, max_batch 8) on the
    stub, created with views=self.views."""

    views = False

    def setUp(self):
        self.lib = support.stub_library()
        if self.lib is None:
            self.skipTest("no C compiler or mlatune.h: cannot build the stub library")
        self.rt = mlatune.Runtime(library=self.lib)
        self.plan = self.rt.plan(16, sq=2, page_size=64, q_dtype="bfloat16", kv_dtype="bfloat16",
                                 softmax_scale=0.0417, max_batch=8, views=self.views)
        self.args = support.stub_call_args(self.plan, batch=3)

    def tearDown(self):
        if hasattr(self, "rt"):
            self.rt.close()

    def runs(self):
        return self.lib._cdll.stub_run_count()

    def assertRefused(self, message_start, **changes):
        """plan.run with some arguments replaced must raise Error whose
        message starts with message_start, and must not reach C."""
        args = dict(self.args, **changes)
        before = self.runs()
        with self.assertRaises(mlatune.Error) as cm:
            self.plan.run(**args)
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
        self.assertTrue(cm.exception.message.startswith(message_start),
                        f"message {cm.exception.message!r} does not start with {message_start!r}")
        self.assertEqual(self.runs(), before, "a refused call reached C")
        return cm.exception.message

    def fake(self, name, **changes):
        """A copy of argument `name` with some fields changed."""
        a = self.args[name]
        f = dict(ptr=a.ptr, shape=a.shape, typestr=a.typestr, strides=a.strides, device=getattr(a, "device", None))
        f.update(changes)
        return FakeCudaArray(**f)


class AcceptedCallTest(StubCase):

    def test_pointers_sizes_and_defaults_reach_c(self):
        before = self.runs()
        self.plan.run(**self.args)
        self.assertEqual(self.runs(), before + 1)
        a, got = self.args, _args_of(self.lib)
        self.assertEqual(got.batch, 3)
        self.assertEqual(got.max_blocks_per_seq, 4)
        for field, name in (("q", "q"), ("kv_cache", "kv_cache"), ("block_table", "block_table"),
                            ("seq_lens", "seq_lens"), ("out", "out"), ("lse", "lse"),
                            ("workspace", "workspace"), ("schedule", "schedule")):
            self.assertEqual(getattr(got, field), a[name].ptr, field)
        self.assertEqual(got.workspace_size, self.plan.workspace_size)
        self.assertEqual(got.seq_len_hint, LENGTHS_UNKNOWN)
        self.assertEqual(got.max_seq_len_hint, 0)
        self.assertIsNone(self.lib._cdll.stub_last_stream())  # NULL: not torch, no stream given

    def test_hints_and_stream_reach_c(self):
        class Stream:
            cuda_stream = 0x5EED0
        for stream, handle in ((0x1234, 0x1234), (Stream(), 0x5EED0)):
            self.plan.run(**self.args, seq_len_hint=1000, max_seq_len_hint=4000, stream=stream)
            got = _args_of(self.lib)
            self.assertEqual((got.seq_len_hint, got.max_seq_len_hint), (1000, 4000))
            self.assertEqual(self.lib._cdll.stub_last_stream(), handle)

    def test_token_major_and_4d_kv_forms(self):
        args = support.stub_call_args(self.plan, batch=3, token_major=True)  # q [B*Sq, N, D]
        kv = args["kv_cache"]
        args["kv_cache"] = FakeCudaArray(kv.ptr, (16, 64, 1, 576), kv.typestr)  # [pages, page, 1, D]
        self.plan.run(**args)
        self.assertEqual(_args_of(self.lib).q, args["q"].ptr)
        self.assertEqual(_args_of(self.lib).kv_cache, kv.ptr)

    def test_block_table_may_have_more_rows(self):
        bt = self.fake("block_table", shape=(8, 4))  # a slice of a larger table: rows past B unused
        self.plan.run(**dict(self.args, block_table=bt))
        self.assertEqual(_args_of(self.lib).block_table, bt.ptr)

    def test_optional_workspace_and_schedule(self):
        args = dict(self.args, workspace=None, schedule=None)
        # the stub, like the runtime, needs a workspace: the C message comes back
        with self.assertRaises(mlatune.Error) as cm:
            self.plan.run(**args)
        self.assertIn("workspace of", cm.exception.message)
        args["workspace"] = self.args["workspace"]
        self.plan.run(**args)
        self.assertIsNone(_args_of(self.lib).schedule)

    def test_device_array(self):
        p = self.plan.problem
        a = {k: mlatune.DeviceArray(v.ptr, v.shape, {"<V2": "bfloat16", "<i4": "int32", "<f4": "float32",
                                                     "|u1": "uint8"}[v.typestr], device=0)
             for k, v in self.args.items()}
        self.plan.run(**a)
        self.assertEqual(_args_of(self.lib).out, self.args["out"].ptr)
        self.assertEqual(p.n_heads, 16)

    def test_run_raw_passes_integers_through(self):
        self.plan.run_raw(5, 0x1000, 0x2000, 0x3004, 0x4008, 0x5000, 0x600C, workspace=0x7000,
                          workspace_size=5 * 4096, max_blocks_per_seq=9, seq_len_hint=77, max_seq_len_hint=99,
                          schedule=0x8000, stream=0xABC)
        got = _args_of(self.lib)
        self.assertEqual((got.batch, got.q, got.kv_cache, got.block_table, got.seq_lens, got.out, got.lse),
                         (5, 0x1000, 0x2000, 0x3004, 0x4008, 0x5000, 0x600C))
        self.assertEqual((got.workspace, got.workspace_size, got.max_blocks_per_seq), (0x7000, 5 * 4096, 9))
        self.assertEqual((got.seq_len_hint, got.max_seq_len_hint, got.schedule), (77, 99, 0x8000))
        self.assertEqual(self.lib._cdll.stub_last_stream(), 0xABC)

    def test_build_schedule(self):
        before = self.lib._cdll.stub_schedule_count()
        self.plan.build_schedule(**self.args, seq_len_hint=500, stream=0x77)
        self.assertEqual(self.lib._cdll.stub_schedule_count(), before + 1)
        self.assertEqual(self.lib._cdll.stub_last_schedule(), self.args["schedule"].ptr)
        self.assertEqual(_args_of(self.lib).seq_len_hint, 500)
        self.assertEqual(self.lib._cdll.stub_last_stream(), 0x77)
        with self.assertRaises(mlatune.Error) as cm:
            self.plan.build_schedule(**dict(self.args, schedule=None))
        self.assertTrue(cm.exception.message.startswith("schedule: missing"))


class RefusedArgumentTest(StubCase):

    def test_wrong_dtype(self):
        self.assertEqual(self.assertRefused("q:", q=self.fake("q", typestr="<f2")),
                         "q: expected dtype bfloat16, got float16")
        self.assertRefused("kv_cache: expected dtype bfloat16, got float16", kv_cache=self.fake("kv_cache", typestr="<f2"))
        self.assertRefused("block_table: expected dtype int32, got float32",
                           block_table=self.fake("block_table", typestr="<f4"))
        self.assertRefused("seq_lens: expected dtype int32, got float32", seq_lens=self.fake("seq_lens", typestr="<f4"))
        self.assertRefused("out: expected dtype bfloat16, got float16", out=self.fake("out", typestr="<f2"))
        self.assertRefused("lse: expected dtype float32, got float16", lse=self.fake("lse", typestr="<f2"))

    def test_wrong_shape(self):
        msg = self.assertRefused("q: expected shape", q=self.fake("q", shape=(3, 2, 16, 512)))
        self.assertIn("[3, 2, 16, 576] or [6, 16, 576]", msg)
        self.assertIn("got [3, 2, 16, 512]", msg)
        self.assertRefused("q: expected shape", q=self.fake("q", shape=(3, 1, 16, 576)))  # Sq 1, plan has 2
        self.assertRefused("kv_cache: expected shape [*, 64, 576] or [*, 64, 1, 576], got [16, 32, 576]",
                           kv_cache=self.fake("kv_cache", shape=(16, 32, 576)))
        self.assertRefused("block_table: expected shape [>= 3,", block_table=self.fake("block_table", shape=(2, 4)))
        self.assertRefused("block_table: expected shape", block_table=self.fake("block_table", shape=(12,)))
        self.assertRefused("seq_lens: expected shape [batch] with 1 <= batch <= 8",
                           seq_lens=self.fake("seq_lens", shape=(3, 1)))
        self.assertRefused("seq_lens: expected shape [batch] with 1 <= batch <= 8 (the plan's max_batch), got [9]",
                           seq_lens=self.fake("seq_lens", shape=(9,)))
        self.assertRefused("seq_lens: expected shape", seq_lens=self.fake("seq_lens", shape=(0,)))
        self.assertRefused("out: expected shape", out=self.fake("out", shape=(3, 2, 16, 576)))
        self.assertRefused("lse: expected shape", lse=self.fake("lse", shape=(3, 2, 17)))
        # the batch comes from seq_lens: a q for another batch is refused
        self.assertRefused("q: expected shape [2, 2, 16, 576]", seq_lens=self.fake("seq_lens", shape=(2,)))

    def test_misaligned(self):
        for name, off, align in (("q", 8, 16), ("kv_cache", 2, 16), ("block_table", 2, 4), ("seq_lens", 2, 4),
                                 ("out", 8, 16), ("lse", 2, 4), ("workspace", 8, 16), ("schedule", 4, 16)):
            ptr = self.args[name].ptr + off
            self.assertRefused(f"{name}: data pointer 0x{ptr:x} is not {align}-byte aligned",
                               **{name: self.fake(name, ptr=ptr)})

    def test_non_contiguous(self):
        # the tensors with no strides in mlt_decode_args must be dense
        item = 4
        self.assertRefused("block_table: not contiguous",
                           block_table=self.fake("block_table", shape=(3, 4), strides=(32, 4)))  # rows of 8
        self.assertRefused("seq_lens: not contiguous", seq_lens=self.fake("seq_lens", strides=(8,)))
        self.assertRefused("workspace: not contiguous", workspace=self.fake("workspace", strides=(2,)))
        msg = self.assertRefused("kv_cache: not contiguous",
                                 kv_cache=self.fake("kv_cache", strides=(64 * 640 * 2, 640 * 2, 2)))
        self.assertIn("(only q, out and lse may be strided views)", msg)
        self.assertRefused("schedule: not contiguous", schedule=self.fake("schedule", shape=(256,), strides=(item,)))
        # a row-major layout written out with explicit strides is contiguous
        q = self.args["q"]
        self.plan.run(**dict(self.args, q=self.fake("q", strides=(2 * 16 * 576 * 2, 16 * 576 * 2, 576 * 2, 2))))
        self.assertEqual(_args_of(self.lib).q, q.ptr)
        self.assertEqual(tuple(_args_of(self.lib).q_strides), (0, 0, 0))

    def test_wrong_device(self):
        self.assertRefused("q: on cuda:1, expected cuda:0 (the runtime's device)", q=self.fake("q", device=1))
        self.assertRefused("kv_cache: on cpu, expected cuda:0", kv_cache=self.fake("kv_cache", device="cpu"))
        self.assertRefused("lse: on cuda:1", lse=self.fake("lse", device=1))
        self.assertRefused("workspace: on cuda:1", workspace=self.fake("workspace", device=1))
        # an object that does not say where it lives is taken as it is
        self.plan.run(**dict(self.args, q=self.fake("q", device=None)))

    def test_schedule_too_small(self):
        self.assertRefused("schedule: 256 bytes, the plan needs 512", schedule=self.fake("schedule", shape=(256,)))

    def test_not_a_tensor(self):
        self.assertRefused("q: missing (None)", q=None)
        self.assertRefused("kv_cache: expected a torch tensor, an object with __cuda_array_interface__ or an "
                           "mlatune.DeviceArray, got object", kv_cache=object())
        self.assertRefused("out: __cuda_array_interface__ typestr '<f8' is not a dtype",
                           out=self.fake("out", typestr="<f8"))

    def test_bad_hints_and_stream(self):
        self.assertRefused("seq_len_hint 1.5", seq_len_hint=1.5)
        self.assertRefused("seq_len_hint 1 / max_seq_len_hint 4294967296", seq_len_hint=1, max_seq_len_hint=2 ** 32)
        self.assertRefused("stream: expected an int handle or an object with .cuda_stream, got object",
                           stream=object())

    def test_fp8_kv_is_taken_as_bytes_or_fp8(self):
        plan = self.rt.plan(16, sq=2, page_size=64, q_dtype="bf16", kv_dtype="fp8", softmax_scale=0.0417,
                            kv_scale=0.5, max_batch=8)
        args = support.stub_call_args(plan, batch=3)
        self.assertEqual(args["kv_cache"].typestr, "|u1")
        plan.run(**args)
        self.assertEqual(_args_of(self.lib).kv_cache, args["kv_cache"].ptr)
        kv = args["kv_cache"]
        with self.assertRaises(mlatune.Error) as cm:
            plan.run(**dict(args, kv_cache=FakeCudaArray(kv.ptr, kv.shape, "<V2")))
        self.assertEqual(cm.exception.message,
                         "kv_cache: expected dtype float8_e4m3fn or uint8 or int8, got bfloat16")
        problem = self.lib._cdll.stub_plan_problem(plan._handle).contents
        self.assertEqual((problem.kv_dtype, problem.kv_scale), (int(mlatune.DType.FP8_E4M3), 0.5))


def _views_of(lib):
    """The view fields C got: (q, q_pe, q_strides, q_pe_strides, out_strides, lse_strides, kv_scale_device)."""
    a = _args_of(lib)
    return (a.q, a.q_pe or 0, tuple(a.q_strides), tuple(a.q_pe_strides), tuple(a.out_strides), tuple(a.lse_strides),
            a.kv_scale_device or 0)


BF = 2  # bytes per bfloat16


class ViewsTest(StubCase):
    """C API 0.2: q as (ql_nope, q_pe), strided q / out / lse, lse heads
    first, the kv scale in device memory.  The plan: N=16, Sq=2, D=576,
    Dl=512, batch 3, created with views=True."""

    views = True

    def bf16(self, ptr, shape, strides_elems=None):
        strides = None if strides_elems is None else tuple(s * BF for s in strides_elems)
        return FakeCudaArray(ptr, shape, "<V2", strides=strides)

    def run_views(self, **changes):
        self.plan.run(**dict(self.args, **changes))
        return _views_of(self.lib)

    def test_version(self):
        self.assertEqual(self.lib.version, (0, 3))
        self.assertTrue(self.lib.supports_views and self.lib.supports_split_q)
        self.assertEqual(mlatune.VIEWS_VERSION, mlatune.SPLIT_Q_VERSION)

    def test_contiguous_call_sends_no_views(self):
        q = self.args["q"]
        self.assertEqual(self.run_views(), (q.ptr, 0, (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), 0))

    def test_pair_of_contiguous_parts(self):
        nope = self.bf16(0x7A0000000000, (3, 2, 16, 512))
        pe = self.bf16(0x7B0000000000, (3, 2, 16, 64))
        self.assertEqual(self.run_views(q=(nope, pe)),
                         (nope.ptr, pe.ptr, (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), 0))
        self.plan.run(**dict(self.args, q=[nope, pe]))  # a list is a pair too
        self.assertEqual(_args_of(self.lib).q_pe, pe.ptr)

    def test_pair_of_slices_of_one_q(self):
        # q[..., :512] and q[..., 512:]: both keep q's strides
        base = self.args["q"].ptr
        full = (2 * 16 * 576, 16 * 576, 576, 1)
        nope, pe = self.bf16(base, (3, 2, 16, 512), full), self.bf16(base + 512 * BF, (3, 2, 16, 64), full)
        self.assertEqual(self.run_views(q=(nope, pe)),
                         (base, base + 1024, (18432, 9216, 576), (18432, 9216, 576), (0, 0, 0), (0, 0, 0), 0))
        # the token-major forms [B*Sq, N, W]: request stride = Sq * token stride
        nope3 = self.bf16(base, (6, 16, 512), (16 * 576, 576, 1))
        pe3 = self.bf16(base + 1024, (6, 16, 64), (16 * 576, 576, 1))
        self.assertEqual(self.run_views(q=(nope3, pe3))[2:4], ((18432, 9216, 576), (18432, 9216, 576)))

    def test_q_out_lse_as_views_of_larger_tensors(self):
        q = self.bf16(0x7A0000000000, (3, 2, 16, 576), (2 * 16 * 640, 16 * 640, 640, 1))  # rows of 640
        out = self.bf16(0x7B0000000100, (6, 16, 512), (16 * 1024, 1024, 1))                # [B*Sq, N, Dl] of 1024
        lse = FakeCudaArray(0x7C0000000040, (3, 2, 16), "<f4", strides=(2 * 32 * 4, 32 * 4, 4))  # N of 32
        got = self.run_views(q=q, out=out, lse=lse)
        self.assertEqual(got, (q.ptr, 0, (20480, 10240, 640), (0, 0, 0), (32768, 16384, 1024), (64, 32, 1), 0))
        self.assertEqual((_args_of(self.lib).out, _args_of(self.lib).lse), (out.ptr, lse.ptr))

    def test_head_major_q(self):
        # q [B, Sq, N, D] whose heads are outermost in memory (a transposed bmm output)
        q = self.bf16(0x7A0000000000, (3, 2, 16, 576), (2 * 576, 576, 3 * 2 * 576, 1))
        self.assertEqual(self.run_views(q=q)[2], (1152, 576, 3456))

    def test_lse_heads_first(self):
        lse = FakeCudaArray(0x7C0000000000, (3, 16, 2), "<f4")  # FlashMLA's [B, N, Sq], contiguous
        self.assertEqual(self.run_views(lse=lse, lse_layout="heads_first")[5], (32, 1, 2))
        self.assertEqual(self.run_views(lse_layout="tokens_first")[5], (0, 0, 0))  # the default, named
        self.assertRefused("lse: expected shape [3, 16, 2], got [3, 2, 16]", lse_layout="heads_first")
        self.assertRefused('lse_layout: expected "tokens_first"', lse=lse, lse_layout="bns")

    def test_kv_scale_tensor(self):
        for shape in ((1,), ()):
            scale = FakeCudaArray(0x7D0000000004, shape, "<f4")
            self.assertEqual(self.run_views(kv_scale=scale)[6], scale.ptr)
        scale = mlatune.DeviceArray(0x7D0000000008, (1,), "float32", device=0)
        self.assertEqual(self.run_views(kv_scale=scale)[6], scale.ptr)
        q = self.args["q"]
        self.assertEqual(self.run_views(kv_scale=None), (q.ptr, 0, (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), 0))

    def test_dimensions_of_one_index_take_any_stride(self):
        # Sq = 1 (vLLM's q [B, N, W]): the token stride never moves a pointer;
        # whatever the tensor says, C gets one that passes its rules
        plan = self.rt.plan(16, sq=1, page_size=64, q_dtype="bf16", kv_dtype="bf16", softmax_scale=0.1, max_batch=8,
                            views=True)
        args = support.stub_call_args(plan, batch=1, token_major=True)
        nope = self.bf16(0x7A0000000000, (1, 16, 512), (3, 512 * 7, 1))      # batch 1: request stride 3 is moot
        pe = self.bf16(0x7B0000000000, (1, 16, 64), (192 * 16, 192, 1))
        plan.run(**dict(args, q=(nope, pe)))
        got = _views_of(self.lib)
        self.assertEqual(got[2], (16 * 512, 16 * 512, 3584))
        self.assertEqual(got[3], (16 * 64, 16 * 64, 192))
        # a contiguous layout reached through odd strides of one-index dims is sent as contiguous
        out = self.bf16(args["out"].ptr, (1, 16, 512), (5, 512, 1))
        plan.run(**dict(args, out=out))
        self.assertEqual(_views_of(self.lib)[4], (0, 0, 0))

    def test_build_schedule_takes_the_same_forms(self):
        base = self.args["q"].ptr
        full = (2 * 16 * 576, 16 * 576, 576, 1)
        nope, pe = self.bf16(base, (3, 2, 16, 512), full), self.bf16(base + 1024, (3, 2, 16, 64), full)
        lse = FakeCudaArray(0x7C0000000000, (3, 16, 2), "<f4")
        scale = FakeCudaArray(0x7D0000000004, (), "<f4")
        self.plan.build_schedule(**dict(self.args, q=(nope, pe), lse=lse), lse_layout="heads_first", kv_scale=scale)
        self.assertEqual(_views_of(self.lib),
                         (base, base + 1024, (18432, 9216, 576), (18432, 9216, 576), (0, 0, 0), (32, 1, 2),
                          scale.ptr))

    def test_run_raw_views(self):
        self.plan.run_raw(3, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000, 3 * 4096, 4,
                          q_pe=0x9000, q_strides=(18432, 9216, 576), q_pe_strides=(8, 16, 24),
                          out_strides=(32768, 16384, 1024), lse_strides=(32, 1, 2), kv_scale_device=0xA004)
        self.assertEqual(_views_of(self.lib), (0x1000, 0x9000, (18432, 9216, 576), (8, 16, 24),
                                                (32768, 16384, 1024), (32, 1, 2), 0xA004))
        self.plan.run_raw(3, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000, 3 * 4096, 4)
        self.assertEqual(_views_of(self.lib), (0x1000, 0, (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), 0))

    def test_c_refusals_come_through(self):
        # what the package lets through unchecked (run_raw) the C side refuses, naming the rule
        for kwargs, message in (
                (dict(out_strides=(-512, 512, 512)), "mla_decode: out stride per request is -512: negative strides "
                                                      "are not supported"),
                (dict(q_strides=(18432, 9216, 580)), "mla_decode: q stride per head is 580 elements, not a multiple "
                                                     "of 8 (rows are moved in 16-byte pieces)"),
                (dict(q_pe=0x9008), "mla_decode: q_pe pointer 0x9008 is not 16-byte aligned"),
                (dict(q_pe_strides=(8, 8, 8)), "mla_decode: q_pe strides given without q_pe"),
                (dict(kv_scale_device=0xA002), "mla_decode: kv scale pointer 0xa002 is not 4-byte aligned")):
            with self.assertRaises(mlatune.Error) as cm:
                self.plan.run_raw(3, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000, 3 * 4096, 4, **kwargs)
            self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
            self.assertEqual(cm.exception.message, message)


class RefusedViewTest(ViewsTest.__base__):
    """What the C side would refuse is refused here first, naming the
    argument as the caller wrote it; nothing reaches C.  (A plan with
    views=True: PlanViewsTest has the refusals of a plan without.)"""

    views = True
    bf16 = ViewsTest.bf16

    def test_strides_not_multiples_of_8(self):
        q = self.bf16(0x7A0000000000, (3, 2, 16, 576), (2 * 16 * 580, 16 * 580, 580, 1))
        msg = self.assertRefused("q: stride per head is 580 elements", q=q)
        self.assertIn("not a multiple of 8 (rows are moved in 16-byte pieces)", msg)
        self.assertIn("strides [18560, 9280, 580, 1]", msg)
        out = self.bf16(0x7B0000000000, (6, 16, 512), (16 * 516, 516, 1))
        self.assertRefused("out: stride per head is 516 elements (shape [6, 16, 512], strides [8256, 516, 1])",
                           out=out)
        base = self.args["q"].ptr
        nope = self.bf16(base, (3, 2, 16, 512), (2 * 16 * 576, 16 * 576, 576, 1))
        pe = self.bf16(base + 1024, (3, 2, 16, 64), (2 * 16 * 68, 16 * 68, 68, 1))
        self.assertRefused("q[1] (q_pe): stride per head is 68 elements", q=(nope, pe))
        # lse is read and written in 4-byte words: any stride goes
        lse = FakeCudaArray(0x7C0000000000, (3, 2, 16), "<f4", strides=(4 * 100, 4 * 17, 4))
        self.plan.run(**dict(self.args, lse=lse))
        self.assertEqual(tuple(_args_of(self.lib).lse_strides), (100, 17, 1))

    def test_rows_must_be_dense(self):
        q = self.bf16(0x7A0000000000, (3, 2, 16, 576), (2 * 16 * 1152, 16 * 1152, 1152, 2))
        self.assertRefused("q: the last dimension has stride 2 (shape [3, 2, 16, 576], strides "
                           "[36864, 18432, 1152, 2] elements): each row's 576 elements must be adjacent", q=q)

    def test_negative_strides(self):
        out = self.bf16(0x7B0000000000, (3, 2, 16, 512), (-2 * 16 * 512, 16 * 512, 512, 1))
        self.assertRefused("out: stride per request is -16384 elements (shape [3, 2, 16, 512], strides "
                           "[-16384, 8192, 512, 1]): negative strides are not supported", out=out)

    def test_overlapping_outputs(self):
        out = self.bf16(0x7B0000000000, (3, 2, 16, 512), (2 * 16 * 256, 16 * 256, 256, 1))
        self.assertRefused("out: strides [8192, 4096, 256, 1] (shape [3, 2, 16, 512]) make rows overlap: a stride "
                           "of 256 elements where 512 are needed", out=out)
        lse = FakeCudaArray(0x7C0000000000, (3, 2, 16), "<f4", strides=(0, 4 * 16, 4))  # every request's rows at one place
        self.assertRefused("lse: strides [0, 16, 1] (shape [3, 2, 16]) make rows overlap: a stride of 0 elements "
                           "where 1 are needed", lse=lse)
        lse_hf = FakeCudaArray(0x7C0000000000, (3, 16, 2), "<f4", strides=(4 * 32, 4 * 1, 4 * 8))
        self.assertRefused("lse: strides [32, 1, 8] (shape [3, 16, 2]) make rows overlap: a stride of 8 elements "
                           "where 16 are needed", lse=lse_hf, lse_layout="heads_first")
        # the same strides read as [B, N, Sq] by a contiguous [B, Sq, N] lse: no overlap
        lse_hf = FakeCudaArray(0x7C0000000000, (3, 16, 2), "<f4", strides=(4 * 32, 4 * 1, 4 * 16))
        self.plan.run(**dict(self.args, lse=lse_hf), lse_layout="heads_first")
        self.assertEqual(tuple(_args_of(self.lib).lse_strides), (0, 0, 0))

    def test_broadcast_q(self):
        # all-zero strides mean 'contiguous' to C: a broadcast q cannot be said
        q = self.bf16(0x7A0000000000, (3, 2, 16, 576), (0, 0, 0, 1))
        self.assertRefused("q: strides [0, 0, 0, 1] (shape [3, 2, 16, 576]): every row at one address", q=q)
        # broadcast along some dimensions only is a view C reads as it is
        q = self.bf16(0x7A0000000000, (3, 2, 16, 576), (0, 576, 1152, 1))
        self.plan.run(**dict(self.args, q=q))
        self.assertEqual(tuple(_args_of(self.lib).q_strides), (0, 576, 1152))

    def test_pair_arguments(self):
        base = self.args["q"].ptr
        nope, pe = self.bf16(base, (3, 2, 16, 512)), self.bf16(base + 0x100000, (3, 2, 16, 64))
        self.assertRefused("q: expected one tensor or a pair (ql_nope, q_pe), got a sequence of 1", q=(nope,))
        self.assertRefused("q: expected one tensor or a pair (ql_nope, q_pe), got a sequence of 3", q=(nope, pe, pe))
        self.assertRefused("q[0] (ql_nope): expected shape [3, 2, 16, 512] or [6, 16, 512], got [3, 2, 16, 576]",
                           q=(self.args["q"], pe))
        self.assertRefused("q[1] (q_pe): expected shape [3, 2, 16, 64] or [6, 16, 64], got [3, 2, 16, 512]",
                           q=(nope, nope))
        self.assertRefused("q[1] (q_pe): expected dtype bfloat16, got float16",
                           q=(nope, FakeCudaArray(pe.ptr, pe.shape, "<f2")))
        self.assertRefused("q[1] (q_pe): data pointer 0x7f0000100008 is not 16-byte aligned",
                           q=(nope, self.bf16(pe.ptr + 8, pe.shape)))
        self.assertRefused("q[0] (ql_nope): on cuda:1", q=(FakeCudaArray(nope.ptr, nope.shape, "<V2", device=1), pe))
        self.assertRefused("q[1] (q_pe): missing (None)", q=(nope, None))
        plan = self.rt.plan(16, sq=2, d=512, dl=512, page_size=64, q_dtype="bf16", kv_dtype="bf16",
                            softmax_scale=0.1, max_batch=8, views=True)
        with self.assertRaises(mlatune.Error) as cm:
            plan.run(**dict(support.stub_call_args(plan, batch=3), q=(nope, pe)))
        self.assertEqual(cm.exception.message,
                         "q: the split form (ql_nope, q_pe) needs D > Dl and Dl a multiple of 8 (the plan has "
                         "D=512, Dl=512)")

    def test_kv_scale_arguments(self):
        self.assertRefused("kv_scale: expected a device tensor holding one float32 (vLLM's layer._k_scale), got "
                           "float 0.5: a fixed scale is the plan's (Runtime.plan(kv_scale=...))", kv_scale=0.5)
        self.assertRefused("kv_scale: expected dtype float32, got float16",
                           kv_scale=FakeCudaArray(0x7D0000000000, (1,), "<f2"))
        self.assertRefused("kv_scale: expected one element (shape [] or [1]), got shape [2]",
                           kv_scale=FakeCudaArray(0x7D0000000000, (2,), "<f4"))
        self.assertRefused("kv_scale: on cpu, expected cuda:0",
                           kv_scale=FakeCudaArray(0x7D0000000000, (1,), "<f4", device="cpu"))
        self.assertRefused("kv_scale: data pointer 0x7d0000000002 is not 4-byte aligned",
                           kv_scale=FakeCudaArray(0x7D0000000002, (1,), "<f4"))


class OldLibraryTest(unittest.TestCase):
    """A C API 0.1 library (no mlt_api_version): the contiguous call works
    and sends no views; every form that needs them raises Unsupported (an
    Error and a NotImplementedError) naming what and the versions."""

    def setUp(self):
        self.lib = support.stub_library(api_0_1=True)
        if self.lib is None:
            self.skipTest("no C compiler or mlatune.h: cannot build the stub library")
        self.rt = mlatune.Runtime(library=self.lib)
        # views=True: what refuses the views is the library (a 0.1 one
        # ignores the field)
        self.plan = self.rt.plan(16, sq=2, page_size=64, q_dtype="bfloat16", kv_dtype="bfloat16",
                                 softmax_scale=0.0417, max_batch=8, views=True)
        self.args = support.stub_call_args(self.plan, batch=3)
        self.addCleanup(self.rt.close)

    def unsupported(self, message_start, plan=None, **changes):
        before = self.lib._cdll.stub_run_count()
        with self.assertRaises(mlatune.Unsupported) as cm:
            (plan or self.plan).run(**dict(self.args, **changes))
        e = cm.exception
        self.assertIsInstance(e, mlatune.Error)
        self.assertIsInstance(e, NotImplementedError)
        self.assertEqual(e.status, Status.ERR_INVALID_ARGUMENT)
        self.assertTrue(e.message.startswith(message_start), e.message)
        self.assertIn(f"needs libmlatune C API >= 0.2; {self.lib.path} has API 0.1", e.message)
        self.assertEqual(self.lib._cdll.stub_run_count(), before)
        return e.message

    def test_version(self):
        self.assertEqual(self.lib.version, (0, 1))
        self.assertFalse(self.lib.supports_views)
        self.assertIsNone(self.lib.mlt_api_version)

    def test_contiguous_call_works(self):
        self.plan.run(**self.args)  # the stub 0.1 fails any call that carries views
        self.assertEqual(_views_of(self.lib)[0], self.args["q"].ptr)

    def test_views_are_unsupported(self):
        q = self.args["q"]
        nope = FakeCudaArray(q.ptr, (3, 2, 16, 512), "<V2")
        pe = FakeCudaArray(q.ptr + 0x100000, (3, 2, 16, 64), "<V2")
        msg = self.unsupported("q: the split form (ql_nope, q_pe)", q=(nope, pe))
        self.assertIn("pass q as one [B, Sq, N, 576] tensor", msg)
        self.unsupported("q: a strided view (shape [3, 2, 16, 576], strides [20480, 10240, 640, 1] elements)",
                         q=FakeCudaArray(q.ptr, q.shape, "<V2", strides=(2 * 16 * 640 * 2, 16 * 640 * 2, 640 * 2, 2)))
        self.unsupported("out: a strided view", out=FakeCudaArray(self.args["out"].ptr, (6, 16, 512), "<V2",
                                                                  strides=(1024 * 16 * 2, 1024 * 2, 2)))
        self.unsupported("lse: a strided view (shape [3, 16, 2]", lse=FakeCudaArray(0x7C0000000000, (3, 16, 2), "<f4"),
                         lse_layout="heads_first")
        self.unsupported("kv_scale: a scale read from device memory", kv_scale=FakeCudaArray(0x7D0000000000, (), "<f4"))
        with self.assertRaises(mlatune.Unsupported):
            self.plan.run_raw(3, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000, 3 * 4096, 4, q_pe=0x9000)
        with self.assertRaises(mlatune.Unsupported):
            self.plan.run_raw(3, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000, 3 * 4096, 4,
                              lse_strides=[32, 1, 2])
        # zeros spelled out are no views
        self.plan.run_raw(3, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000, 3 * 4096, 4,
                          q_strides=[0, 0, 0], out_strides=(0, 0, 0))

    def test_heads_first_lse_with_one_token_is_contiguous(self):
        # [B, N, 1] is [B, 1, N]'s memory: no view needed, fine on 0.1 (the
        # plan must still ask for views: lse_layout="heads_first" is one)
        plan = self.rt.plan(16, sq=1, page_size=64, q_dtype="bf16", kv_dtype="bf16", softmax_scale=0.1, max_batch=8,
                            views=True)
        args = support.stub_call_args(plan, batch=3)
        plan.run(**dict(args, lse=FakeCudaArray(args["lse"].ptr, (3, 16, 1), "<f4")), lse_layout="heads_first")
        self.assertEqual(_args_of(self.lib).lse, args["lse"].ptr)


class PlanViewsTest(StubCase):
    """A plan created with views=False (the default): every view form is
    refused before C, naming the argument and saying to create the plan
    with views=True; contiguous calls run, on such a plan and on one with
    views=True; the flag reaches mlt_decode_problem."""

    NO_VIEWS = ("cannot be passed to this plan: it was created with views=False (its kernels were built for "
                "contiguous tensors only); create the plan with views=True (Runtime.plan(..., views=True))")

    def bf16(self, ptr, shape, strides_elems=None):
        return ViewsTest.bf16(self, ptr, shape, strides_elems)

    def view_forms(self):
        """(what the message names first, the call's changes) for each view form."""
        base = self.args["q"].ptr
        full = (2 * 16 * 576, 16 * 576, 576, 1)
        nope, pe = self.bf16(base, (3, 2, 16, 512), full), self.bf16(base + 1024, (3, 2, 16, 64), full)
        return (
            ("q: the pair (ql_nope, q_pe) ", dict(q=(nope, pe))),
            ("q: the pair (ql_nope, q_pe) ", dict(q=[self.bf16(0x7A0000000000, (3, 2, 16, 512)),
                                                     self.bf16(0x7B0000000000, (3, 2, 16, 64))])),
            ("q: a strided view (shape [3, 2, 16, 576], strides [20480, 10240, 640, 1] elements) ",
             dict(q=self.bf16(0x7A0000000000, (3, 2, 16, 576), (2 * 16 * 640, 16 * 640, 640, 1)))),
            ("out: a strided view (shape [6, 16, 512], strides [16384, 1024, 1] elements) ",
             dict(out=self.bf16(0x7B0000000100, (6, 16, 512), (16 * 1024, 1024, 1)))),
            ("lse: a strided view (shape [3, 2, 16], strides [64, 32, 1] elements) ",
             dict(lse=FakeCudaArray(0x7C0000000040, (3, 2, 16), "<f4", strides=(2 * 32 * 4, 32 * 4, 4)))),
            ('lse_layout: "heads_first" (lse [B, N, Sq]) ',
             dict(lse=FakeCudaArray(0x7C0000000000, (3, 16, 2), "<f4"), lse_layout="heads_first")),
            ("kv_scale: a scale read from device memory (a tensor) ",
             dict(kv_scale=FakeCudaArray(0x7D0000000004, (), "<f4"))),
            ("kv_scale: a scale read from device memory (a tensor) ",
             dict(kv_scale=mlatune.DeviceArray(0x7D0000000008, (1,), "float32", device=0))),
        )

    def test_run_refuses_every_view_form(self):
        self.assertFalse(self.plan.problem.views)
        for subject, changes in self.view_forms():
            with self.subTest(subject=subject):
                self.assertRefused(subject + self.NO_VIEWS, **changes)
                # an Error, not Unsupported: the library could take it, the plan cannot
                with self.assertRaises(mlatune.Error) as cm:
                    self.plan.run(**dict(self.args, **changes))
                self.assertNotIsInstance(cm.exception, mlatune.Unsupported)

    def test_messages_say_what_else_to_do(self):
        forms = self.view_forms()
        for (subject, changes), advice in zip(
                (forms[0], forms[2], forms[5], forms[6]),
                ("pass q as one [B, Sq, N, 576] tensor", "pass a contiguous tensor",
                 'pass lse as [B, Sq, N] (lse_layout "tokens_first", the default)',
                 "give the plan its scale (Runtime.plan(kv_scale=...))")):
            with self.subTest(subject=subject):
                self.assertEqual(self.assertRefused(subject, **changes), subject + self.NO_VIEWS + ", or " + advice)

    def test_build_schedule_refuses_every_view_form(self):
        for subject, changes in self.view_forms():
            with self.subTest(subject=subject):
                before = self.lib._cdll.stub_schedule_count()
                with self.assertRaises(mlatune.Error) as cm:
                    self.plan.build_schedule(**dict(self.args, **changes))
                self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
                self.assertTrue(cm.exception.message.startswith(subject + self.NO_VIEWS), cm.exception.message)
                self.assertEqual(self.lib._cdll.stub_schedule_count(), before)
        self.plan.build_schedule(**self.args)  # contiguous: fine
        self.plan.build_schedule(**self.args, lse_layout="tokens_first")

    def test_run_raw_names_the_view_arguments(self):
        raw = (3, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000, 3 * 4096, 4)
        for kwargs, names in ((dict(q_pe=0x9000), "q_pe"), (dict(q_strides=(18432, 9216, 576)), "q_strides"),
                              (dict(q_pe_strides=[8, 16, 24]), "q_pe_strides"),
                              (dict(out_strides=(32768, 16384, 1024)), "out_strides"),
                              (dict(lse_strides=(32, 1, 2)), "lse_strides"),
                              (dict(kv_scale_device=0xA004), "kv_scale_device"),
                              (dict(q_pe=0x9000, lse_strides=(32, 1, 2), kv_scale_device=0xA004),
                               "q_pe, lse_strides, kv_scale_device")):
            with self.subTest(names=names):
                before = self.runs()
                with self.assertRaises(mlatune.Error) as cm:
                    self.plan.run_raw(*raw, **kwargs)
                self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
                self.assertEqual(cm.exception.message, f"run_raw: {names} " + self.NO_VIEWS)
                self.assertEqual(self.runs(), before, "a refused call reached C")
        # zeros spelled out are no views
        self.plan.run_raw(*raw, q_strides=[0, 0, 0], out_strides=(0, 0, 0), q_pe=0, kv_scale_device=0)
        self.assertEqual(_views_of(self.lib), (0x1000, 0, (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), 0))

    def test_contiguous_calls_run_on_both_kinds_of_plan(self):
        vplan = self.rt.plan(16, sq=2, page_size=64, q_dtype="bfloat16", kv_dtype="bfloat16", softmax_scale=0.0417,
                             max_batch=8, views=True)
        q = self.args["q"]
        for plan in (self.plan, vplan):
            before = self.runs()
            plan.run(**self.args)
            plan.run(**self.args, lse_layout="tokens_first")
            self.assertEqual(self.runs(), before + 2)
            self.assertEqual(_views_of(self.lib), (q.ptr, 0, (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), 0))
        # odd strides of one-index dimensions are not a view: C gets the contiguous layout
        plan = self.rt.plan(16, sq=1, page_size=64, q_dtype="bf16", kv_dtype="bf16", softmax_scale=0.1, max_batch=8)
        args = support.stub_call_args(plan, batch=1, token_major=True)
        plan.run(**dict(args, out=self.bf16(args["out"].ptr, (1, 16, 512), (5, 512, 1))))
        self.assertEqual(_views_of(self.lib)[4], (0, 0, 0))

    def test_views_reach_c(self):
        problem = self.lib._cdll.stub_plan_problem
        self.assertEqual(problem(self.plan._handle).contents.views, 0)
        for value, want in ((True, 1), (1, 1), (False, 0), (0, 0)):
            plan = self.rt.plan(16, sq=2, page_size=64, q_dtype="bf16", kv_dtype="bf16", softmax_scale=0.0417,
                                max_batch=8, views=value)
            self.assertEqual(problem(plan._handle).contents.views, want, value)
            self.assertIs(plan.problem.views, bool(want))
        self.assertIn(" views>", repr(plan if want else self.rt.plan(
            16, page_size=64, q_dtype="bf16", kv_dtype="bf16", softmax_scale=0.1, max_batch=8, views=True)))
        self.assertNotIn("views", repr(self.plan))
        for bad in (2, -1, "yes", None):
            with self.assertRaises(mlatune.Error) as cm:
                self.rt.plan(16, page_size=64, q_dtype="bf16", kv_dtype="bf16", softmax_scale=0.1, max_batch=8,
                             views=bad)
            self.assertEqual(cm.exception.message, f"views: expected True or False, got {bad!r}")

    def test_c_refuses_views_on_a_plan_without(self):
        # past the package's check (mlt_plan_run called directly), the stub,
        # like the library, refuses with views.c's message
        from mlatune.plan import _ARGS
        a = self.args
        packed = _ARGS.pack(3, LENGTHS_UNKNOWN, 4, a["q"].ptr, a["kv_cache"].ptr, a["block_table"].ptr,
                            a["seq_lens"].ptr, a["out"].ptr, a["lse"].ptr, a["workspace"].ptr, 3 * 4096, 0, 0,
                            0x9000, *(0,) * 12, 0)
        st = self.lib.mlt_plan_run(self.plan._handle, packed, 0)
        self.assertEqual(st, Status.ERR_INVALID_ARGUMENT)
        self.assertEqual(self.lib.last_error(),
                         "mla_decode: this call passes views (q in two parts, strides or a device kv scale) but its "
                         "kernels were built for contiguous tensors only: create the plan with views = 1")


class CErrorTest(StubCase):
    """Failures the C side reports come back as Error(status, mlt_last_error())."""

    def test_run_error_carries_the_c_message(self):
        with self.assertRaises(mlatune.Error) as cm:
            self.plan.run_raw(0, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000)
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
        self.assertEqual(cm.exception.message, "batch 0 outside 1..8 (the plan's max_batch)")
        with self.assertRaises(mlatune.Error) as cm:
            self.plan.run_raw(1, 0x1008, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, workspace=0x7000,
                              workspace_size=4096)
        self.assertEqual(cm.exception.message, "mla_decode: q pointer 0x1008 is not 16-byte aligned")

    def test_plan_create_error(self):
        with self.assertRaises(mlatune.Error) as cm:
            self.rt.plan(0, page_size=64, q_dtype="bf16", kv_dtype="bf16", softmax_scale=0.1, max_batch=4)
        self.assertEqual(cm.exception.message, "head count 0 outside 1..128")

    def test_runtime_create_error(self):
        with self.assertRaises(mlatune.Error) as cm:
            mlatune.Runtime(device=5, library=self.lib)
        self.assertEqual(cm.exception.status, Status.ERR_NO_DEVICE)
        self.assertEqual(cm.exception.message, "stub: device 5 does not exist (2 devices)")

    def test_closed_plan_and_runtime(self):
        plan = self.rt.plan(4, page_size=16, q_dtype="fp16", kv_dtype="fp16", softmax_scale=0.1, max_batch=4)
        plan.close()
        with self.assertRaises(mlatune.Error) as cm:
            plan.run_raw(1, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000)
        self.assertEqual(cm.exception.message, "null plan or arguments")
        self.rt.close()  # closes self.plan first
        self.assertEqual(self.plan._handle, 0)
        with self.assertRaises(mlatune.Error) as cm:
            self.rt.plan(4, page_size=16, q_dtype="fp16", kv_dtype="fp16", softmax_scale=0.1, max_batch=4)
        self.assertEqual(cm.exception.message, "runtime is closed")


class RuntimeTest(StubCase):

    def test_options_reach_c(self):
        rt = mlatune.Runtime(device=1, user_db="/tmp/u.db", system_db="/tmp/s.db", cache_dir="",
                             log_level=mlatune.LogLevel.INFO, library=self.lib)
        o = self.lib._cdll.stub_last_options().contents
        self.assertEqual((o.device, o.user_db, o.system_db, o.cache_dir, o.log_level),
                         (1, b"/tmp/u.db", b"/tmp/s.db", b"", int(mlatune.LogLevel.INFO)))
        self.assertEqual((rt.device, rt.arch), (1, "stub_00"))
        mlatune.Runtime(library=self.lib)
        o = self.lib._cdll.stub_last_options().contents
        self.assertEqual((o.device, o.user_db, o.cache_dir, o.log_level), (0, None, None, int(mlatune.LogLevel.WARN)))

    def test_problem_reaches_c(self):
        plan = self.rt.plan(128, sq=4, d=576, dl=512, page_size=1, q_dtype="torch.float16", kv_dtype=mlatune.DType.FP16,
                            softmax_scale=0.125, max_batch=300)
        p = self.lib._cdll.stub_plan_problem(plan._handle).contents
        self.assertEqual((p.n_heads, p.sq, p.d, p.dl, p.page_size, p.q_dtype, p.kv_dtype, p.softmax_scale,
                          p.kv_scale, p.max_batch, p.views), (128, 4, 576, 512, 1, 1, 1, 0.125, 1.0, 300, 0))
        self.assertEqual((plan.workspace_size, plan.schedule_size), (300 * 4096, 512))
        plan = self.rt.plan(8, page_size=16, q_dtype="bf16", kv_dtype="fp8", softmax_scale=0.1, kv_scale=0.25,
                            max_batch=2, views=True)
        p = self.lib._cdll.stub_plan_problem(plan._handle).contents
        self.assertEqual((p.n_heads, p.kv_dtype, p.kv_scale, p.max_batch, p.views), (8, 2, 0.25, 2, 1))

    def test_record_calls_reaches_c(self):
        self.rt.record_calls()
        self.assertEqual(self.lib._cdll.stub_record_calls(), 1)
        self.rt.record_calls(False)
        self.assertEqual(self.lib._cdll.stub_record_calls(), 0)
        rt = mlatune.Runtime(library=support.stub_library(api_0_1=True))
        with self.assertRaises(mlatune.Unsupported) as cm:  # a library without the function
            rt.record_calls()
        self.assertIn("has no mlt_runtime_record_calls", cm.exception.message)
        rt.close()

    def test_dtype_names(self):
        for name, want in (("bfloat16", mlatune.DType.BF16), ("bf16", mlatune.DType.BF16),
                           ("half", mlatune.DType.FP16), ("float8_e4m3fn", mlatune.DType.FP8_E4M3), (2, mlatune.DType.FP8_E4M3),
                           ("float8_e4m3fnuz", mlatune.DType.FP8_E4M3_FNUZ), ("fp8e4m3fnuz", mlatune.DType.FP8_E4M3_FNUZ),
                           (3, mlatune.DType.FP8_E4M3_FNUZ)):
            self.assertEqual(mlatune.as_dtype(name), want)
        with self.assertRaises(mlatune.Error) as cm:
            self.rt.plan(4, page_size=16, q_dtype="float32", kv_dtype="fp16", softmax_scale=0.1, max_batch=4)
        self.assertTrue(cm.exception.message.startswith("q_dtype: 'float32' is not a dtype the runtime knows"))

    def test_explain(self):
        c = self.plan.explain(3, 1000, 4000)
        self.assertEqual(c, mlatune.Choice(reason=mlatune.ChoiceReason.NEAREST_KEY, family="stub_family",
                                           variant="heads=16,page=64", key_batch=6, key_seq_len=2000,
                                           key_max_seq_len=8000, key_lengths="uniform", distance=3.5,
                                           measured_ms=1.0, source="stub", length_aware=False,
                                           why="stub: batch 3, hints 1000/4000"))
        c = self.plan.explain(2)
        self.assertEqual((c.reason, c.length_aware, c.why), (mlatune.ChoiceReason.HEURISTIC, True,
                                                             "stub: batch 2, hints -1/0"))

    def test_device_memory_helpers(self):
        ptr = self.rt.alloc(1000)
        self.assertEqual(ptr % 16, 0)
        self.rt.copy_to_device(ptr, bytes(range(200)) * 5)
        self.assertEqual(self.rt.copy_to_host(ptr + 10, 5), bytes(range(10, 15)))
        self.rt.free(ptr)
        self.rt.synchronize()
        self.rt.bind_thread()


class ChooseFormTest(StubCase):
    """Runtime.choose_form: what reaches C, what comes back, and what is
    refused (by the package: non-integers, values a C int cannot hold,
    unknown dtypes; by C, with its message: the ranges)."""

    def calls(self):
        return self.lib._cdll.stub_form_calls()

    def test_arguments_reach_c_and_the_answer_comes_back(self):
        f = self.rt.choose_form(128, 200, 4096, q_dtype="float16", kv_dtype="fp8")
        self.assertEqual(list(self.lib._cdll.stub_last_form()[:5]),
                         [128, int(mlatune.DType.FP16), int(mlatune.DType.FP8_E4M3), 200, 4096])
        self.assertEqual(f, mlatune.FormChoice(form=mlatune.PrefillForm.MHA, measured=False, source="rule",
                                               key_compute_units=132, key_n_heads=128, key_context=4096, lo_sq=199,
                                               hi_sq=201, mqa_ms=2.0, mha_ms=4.096, boundary_sq=168,
                                               why="stub: 128 heads, sq 200, context 4096"))
        with self.assertRaises(AttributeError):  # frozen
            f.form = mlatune.PrefillForm.MQA
        f = self.rt.choose_form(16, 1, 0)  # bf16 / bf16 by default
        self.assertEqual(list(self.lib._cdll.stub_last_form()[:5]), [16, 0, 0, 1, 0])
        self.assertIs(f.form, mlatune.PrefillForm.MQA)

    def test_refused_by_the_package(self):
        before = self.calls()
        for kwargs, start in (({"n_heads": 16.0}, "n_heads: expected an integer, got 16.0"),
                              ({"sq": "64"}, "sq: expected an integer, got '64'"),
                              ({"sq": True}, "sq: True is not an integer a C int holds"),
                              ({"context": 2**32 + 5}, "context: 4294967301 is not an integer a C int holds"),
                              ({"context": -2**31 - 1}, "context: -2147483649 is not an integer a C int holds"),
                              ({"q_dtype": "float32"}, "q_dtype: 'float32' is not a dtype the runtime knows"),
                              ({"kv_dtype": 9}, "kv_dtype: 9 is not a dtype the runtime knows")):
            args = dict(dict(n_heads=16, sq=64, context=1024), **kwargs)
            with self.assertRaises(mlatune.Error) as cm:
                self.rt.choose_form(**args)
            self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
            self.assertTrue(cm.exception.message.startswith(start), (cm.exception.message, start))
        self.assertEqual(self.calls(), before, "a refused call reached C")

    def test_refused_by_c_with_its_message(self):
        for args, message in (((0, 64, 1024), "head count 0 outside 1..128"),
                              ((129, 64, 1024), "head count 129 outside 1..128"),
                              ((16, 0, 1024), "sq 0 outside 1..1024 (the new tokens of the chunk)"),
                              ((16, 1025, 1024), "sq 1025 outside 1..1024"),
                              ((16, 64, -1), "context -1 is negative")):
            with self.assertRaises(mlatune.Error) as cm:
                self.rt.choose_form(*args)
            self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
            self.assertTrue(cm.exception.message.startswith(message), cm.exception.message)
        with self.assertRaises(mlatune.Error) as cm:
            self.rt.choose_form(16, 64, 1024, q_dtype="fp8")
        self.assertEqual(cm.exception.message, "q_dtype must be MLT_BF16 or MLT_FP16 (got 2)")

    def test_closed_runtime_and_an_older_library(self):
        rt = mlatune.Runtime(library=self.lib)
        rt.close()
        with self.assertRaises(mlatune.Error) as cm:
            rt.choose_form(16, 64, 1024)
        self.assertEqual(cm.exception.message, "runtime is closed")
        old = mlatune.Runtime(library=support.stub_library(api_0_1=True))
        with self.assertRaises(mlatune.Unsupported) as cm:
            old.choose_form(16, 64, 1024)
        self.assertIn("has no mlt_prefill_choose_form", cm.exception.message)
        old.close()


if __name__ == "__main__":
    unittest.main()
