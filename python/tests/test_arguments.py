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
    """A runtime and a bf16 plan (16 heads, Sq 2, page 64, max_batch 8) on the stub."""

    def setUp(self):
        self.lib = support.stub_library()
        if self.lib is None:
            self.skipTest("no C compiler or mlatune.h: cannot build the stub library")
        self.rt = mlatune.Runtime(library=self.lib)
        self.plan = self.rt.plan(16, sq=2, page_size=64, q_dtype="bfloat16", kv_dtype="bfloat16",
                                 softmax_scale=0.0417, max_batch=8)
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
        # q as a transposed view: [B, Sq, N, D] with the head and token dims swapped in memory
        item = 2
        strides = (2 * 16 * 576 * item, 576 * item, 2 * 576 * item, item)
        msg = self.assertRefused("q: not contiguous", q=self.fake("q", strides=strides))
        self.assertIn("strides [18432, 576, 1152, 1] elements", msg)
        self.assertRefused("block_table: not contiguous",
                           block_table=self.fake("block_table", shape=(3, 4), strides=(32, 4)))  # rows of 8
        self.assertRefused("seq_lens: not contiguous", seq_lens=self.fake("seq_lens", strides=(8,)))
        self.assertRefused("out: not contiguous",
                           out=self.fake("out", strides=(2 * 16 * 1024 * item, 16 * 1024 * item, 1024 * item, item)))
        self.assertRefused("lse: not contiguous", lse=self.fake("lse", strides=(2 * 32 * 4, 32 * 4, 4)))
        self.assertRefused("workspace: not contiguous", workspace=self.fake("workspace", strides=(2,)))
        # a row-major layout written out with explicit strides is contiguous
        q = self.args["q"]
        self.plan.run(**dict(self.args, q=self.fake("q", strides=(2 * 16 * 576 * 2, 16 * 576 * 2, 576 * 2, 2))))
        self.assertEqual(_args_of(self.lib).q, q.ptr)

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


class SplitQTest(StubCase):

    def test_pair_is_refused_with_the_version_it_needs(self):
        nope = self.fake("q", shape=(3, 2, 16, 512))
        pe = self.fake("q", shape=(3, 2, 16, 64), ptr=self.args["q"].ptr + 0x100000)
        before = self.runs()
        with self.assertRaises(mlatune.Unsupported) as cm:
            self.plan.run(**dict(self.args, q=(nope, pe)))
        e = cm.exception
        self.assertIsInstance(e, mlatune.Error)
        self.assertIsInstance(e, NotImplementedError)
        self.assertEqual(e.status, Status.ERR_INVALID_ARGUMENT)
        self.assertIn("split form (ql_nope, q_pe) needs libmlatune API >= 0.2", e.message)
        self.assertIn(self.lib.path, e.message)
        self.assertIn("has API 0.1", e.message)
        self.assertEqual(self.runs(), before)

    def test_a_sequence_of_other_length_is_an_error(self):
        with self.assertRaises(mlatune.Error) as cm:
            self.plan.run(**dict(self.args, q=(self.args["q"],)))
        self.assertIn("a pair (ql_nope, q_pe), got a sequence of 1", cm.exception.message)

    def test_pair_rules(self):
        # the parts' checks, ready for the library that takes them
        nope = self.fake("q", shape=(6, 16, 512))
        pe = self.fake("q", shape=(6, 16, 64), ptr=self.args["q"].ptr + 0x100000)
        self.assertEqual(self.plan._rules.q_pair(nope, pe, 3), (nope.ptr, pe.ptr))
        with self.assertRaises(mlatune.Error) as cm:
            self.plan._rules.q_pair(nope, self.fake("q", shape=(6, 16, 32)), 3)
        self.assertTrue(cm.exception.message.startswith("q[1] (q_pe): expected shape"))


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
                          p.kv_scale, p.max_batch), (128, 4, 576, 512, 1, 1, 1, 0.125, 1.0, 300))
        self.assertEqual((plan.workspace_size, plan.schedule_size), (300 * 4096, 512))

    def test_dtype_names(self):
        for name, want in (("bfloat16", mlatune.DType.BF16), ("bf16", mlatune.DType.BF16),
                           ("half", mlatune.DType.FP16), ("float8_e4m3fn", mlatune.DType.FP8_E4M3), (2, mlatune.DType.FP8_E4M3)):
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


if __name__ == "__main__":
    unittest.main()
