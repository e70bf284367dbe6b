"""The torch fast path (_checks.CallRules.torch_pointers) on CPU tensors,
against the stub libmlatune.  Skipped without torch.

CPU tensors report get_device() == -1; for these tests torch.Tensor's
get_device is patched to say 0 (the runtime's device), so that the fast
path's other checks run on real torch tensors (real dtypes, torch.Size,
strides, views).  Every refusal is compared with the general path's
message for the same argument: the two must word it the same way.
"""

import contextlib
import unittest

import support

import mlatune
from mlatune import Status

try:
    import torch
except ImportError:  # the tests say why they skip
    torch = None


@contextlib.contextmanager
def tensors_on_device_0():
    original = torch.Tensor.get_device
    torch.Tensor.get_device = lambda self: 0
    try:
        yield
    finally:
        torch.Tensor.get_device = original


def torch_args(plan, batch=3, max_blocks=4, pages=16, token_major=False):
    p = plan.problem
    qd = {0: torch.bfloat16, 1: torch.float16}[int(p.q_dtype)]
    kvd = {0: torch.bfloat16, 1: torch.float16, 2: torch.uint8}[int(p.kv_dtype)]
    lead = (batch * p.sq,) if token_major else (batch, p.sq)
    return {
        "q": torch.zeros(lead + (p.n_heads, p.d), dtype=qd),
        "kv_cache": torch.zeros((pages, p.page_size, p.d), dtype=kvd),
        "block_table": torch.zeros((batch, max_blocks), dtype=torch.int32),
        "seq_lens": torch.ones((batch,), dtype=torch.int32),
        "out": torch.empty(lead + (p.n_heads, p.dl), dtype=qd),
        "lse": torch.empty(lead + (p.n_heads,), dtype=torch.float32),
        "workspace": torch.empty((plan.workspace_size,), dtype=torch.uint8),
        "schedule": torch.empty((plan.schedule_size,), dtype=torch.uint8),
    }


class _NoStreams:
    """CPU torch has no CUDA streams: the default stream is faked as 0."""
    @staticmethod
    def current(device):
        return 0


@unittest.skipIf(torch is None, "torch is not installed")
class TorchFastPathTest(unittest.TestCase):

    def setUp(self):
        self.lib = support.stub_library()
        if self.lib is None:
            self.skipTest("no C compiler or mlatune.h: cannot build the stub library")
        self.rt = mlatune.Runtime(library=self.lib)
        # views=True: the view forms are tested on it (a plan without:
        # test_plan_without_views_refuses_them)
        self.plan = self.rt.plan(16, sq=2, page_size=64, q_dtype=torch.bfloat16, kv_dtype=torch.bfloat16,
                                 softmax_scale=0.0417, max_batch=8, views=True)
        self.plan._streams = _NoStreams()
        self.args = torch_args(self.plan)
        patch = tensors_on_device_0()
        patch.__enter__()
        self.addCleanup(patch.__exit__, None, None, None)

    def test_pointers_reach_c(self):
        self.plan.run(**self.args)
        got = self.lib._cdll.stub_last_args().contents
        for name in ("q", "kv_cache", "block_table", "seq_lens", "out", "lse", "workspace", "schedule"):
            self.assertEqual(getattr(got, name), self.args[name].data_ptr(), name)
        self.assertEqual((got.batch, got.max_blocks_per_seq, got.workspace_size), (3, 4, self.plan.workspace_size))
        self.assertIsNone(self.lib._cdll.stub_last_stream())

    def test_fast_and_general_paths_agree(self):
        rules = self.plan._rules
        self.assertEqual(rules.torch_pointers(**self.args), rules.pointers(**self.args))
        args = torch_args(self.plan, token_major=True)
        args["kv_cache"] = args["kv_cache"].unsqueeze(2)  # [pages, page, 1, D]
        self.assertEqual(rules.torch_pointers(**args), rules.pointers(**args))

    def refusal(self, views=False, **changes):
        """The fast paths' message for a bad argument, checked against the
        general path's.  views: a call in a form that torch_pointers (the
        contiguous fast path) does not take, only torch_views."""
        args = dict(self.args, **changes)
        rules = self.plan._rules
        if not views:
            with self.assertRaises(mlatune.Error) as fast:
                rules.torch_pointers(**args)
        with self.assertRaises(mlatune.Error) as fast_views:
            rules.torch_views(**args)
        with self.assertRaises(mlatune.Error) as general:
            rules.pointers(**args)
        if not views:
            self.assertEqual(fast.exception.message, general.exception.message)
        self.assertEqual(fast_views.exception.message, general.exception.message)
        self.assertEqual(fast_views.exception.status, Status.ERR_INVALID_ARGUMENT)
        return general.exception.message

    def test_refusals(self):
        a = self.args
        self.assertEqual(self.refusal(q=a["q"].half()), "q: expected dtype bfloat16, got float16")
        self.assertEqual(self.refusal(seq_lens=a["seq_lens"].long()), "seq_lens: expected dtype int32, got int64")
        self.assertEqual(self.refusal(lse=a["lse"].half()), "lse: expected dtype float32, got float16")
        self.assertTrue(self.refusal(out=a["out"][..., :256]).startswith("out: expected shape"))
        self.assertTrue(self.refusal(kv_cache=a["kv_cache"][:, :32]).startswith("kv_cache: expected shape"))
        self.assertTrue(self.refusal(kv_cache=a["kv_cache"][0]).startswith("kv_cache: expected shape"))
        self.assertTrue(self.refusal(block_table=a["block_table"][:2]).startswith("block_table: expected shape"))
        self.assertTrue(self.refusal(seq_lens=torch.ones((9,), dtype=torch.int32)).startswith(
            "seq_lens: expected shape [batch] with 1 <= batch <= 8"))
        self.assertTrue(self.refusal(seq_lens=torch.ones((), dtype=torch.int32)).startswith("seq_lens: expected shape"))
        # views: non-contiguous, and contiguous but at an odd offset
        wide = torch.zeros((3, 8), dtype=torch.int32)
        self.assertTrue(self.refusal(block_table=wide[:, :4]).startswith("block_table: not contiguous"))
        flat = torch.zeros(a["q"].numel() + 8, dtype=torch.bfloat16)
        q_off = flat[4:4 + a["q"].numel()].view(a["q"].shape)  # 8 bytes past an aligned start
        if flat.data_ptr() % 16 == 0:
            self.assertIn("is not 16-byte aligned", self.refusal(q=q_off))
        ws = torch.empty(self.plan.workspace_size + 16, dtype=torch.uint8)
        off = (16 - ws.data_ptr() % 16) % 16 + 4
        self.assertIn("workspace: data pointer", self.refusal(workspace=ws[off:]))
        self.assertIn("schedule: 100 bytes, the plan needs 512", self.refusal(schedule=a["schedule"][:100]))

    def view_cases(self):
        """(what, changes to the arguments, (request, token, head) strides
        C must get for q, q_pe, out, lse) for the plan (N 16, Sq 2, B 3)."""
        a, bf = self.args, torch.bfloat16
        q = a["q"]
        zero = (0, 0, 0)
        return [
            ("pair of q's slices", dict(q_pe=q[..., 512:], q=q[..., :512]),
             ((18432, 9216, 576), (18432, 9216, 576), zero, zero)),
            ("vLLM's pair: a transposed bmm output and a slice",
             dict(q=torch.zeros((16, 6, 512), dtype=bf).transpose(0, 1),
                  q_pe=torch.zeros((6, 16, 192), dtype=bf)[..., 128:]),
             ((1024, 512, 3072), (6144, 3072, 192), zero, zero)),
            ("q a slice of rows of 640", dict(q=torch.zeros((3, 2, 16, 640), dtype=bf)[..., :576]),
             ((20480, 10240, 640), zero, zero, zero)),
            ("out a slice of rows of 1024", dict(out=torch.zeros((6, 16, 1024), dtype=bf)[..., 512:]),
             (zero, zero, (32768, 16384, 1024), zero)),
            ("lse heads first", dict(lse=torch.zeros((3, 16, 2)), heads_first=True), (zero, zero, zero, (32, 1, 2))),
            ("lse a slice, token-major", dict(lse=torch.zeros((6, 32))[:, 16:]), (zero, zero, zero, (64, 32, 1))),
            ("contiguous, named heads first with Sq 2", dict(lse=torch.zeros((3, 2, 16)).transpose(1, 2),
                                                             heads_first=True), (zero, zero, zero, zero)),
        ]

    def test_views_fast_and_general_paths_agree(self):
        rules = self.plan._rules
        for what, changes, strides in self.view_cases():
            args = dict(self.args, **changes)
            fast, general = rules.torch_views(**args), rules.pointers(**args)
            self.assertEqual(fast, general, what)
            views = fast[-1]
            self.assertEqual((views[1:4], views[4:7], views[7:10], views[10:13]), strides, what)
            self.assertEqual(views[0], args["q_pe"].data_ptr() if "q_pe" in changes else 0, what)
            self.assertEqual(fast[2], args["q"].data_ptr(), what)
        # a contiguous call: the same through every path, no views
        self.assertEqual(rules.torch_pointers(**self.args), rules.torch_views(**self.args))
        self.assertIs(rules.torch_views(**self.args)[-1], mlatune._checks.NO_VIEWS)

    def test_views_reach_c(self):
        for what, changes, strides in self.view_cases():
            changes = dict(changes)
            kwargs = {}
            if changes.pop("heads_first", False):
                kwargs["lse_layout"] = "heads_first"
            if "q_pe" in changes:
                changes["q"] = (changes["q"], changes.pop("q_pe"))
            args = dict(self.args, **changes)
            self.plan.run(**args, **kwargs)
            got = self.lib._cdll.stub_last_args().contents
            self.assertEqual((tuple(got.q_strides), tuple(got.q_pe_strides), tuple(got.out_strides),
                              tuple(got.lse_strides)), strides, what)
            q = args["q"]
            self.assertEqual((got.q, got.q_pe or 0), (q[0].data_ptr(), q[1].data_ptr()) if isinstance(q, tuple)
                             else (q.data_ptr(), 0), what)
            self.assertEqual((got.out, got.lse), (args["out"].data_ptr(), args["lse"].data_ptr()), what)
        scale = torch.ones((), dtype=torch.float32)
        self.plan.run(**self.args, kv_scale=scale)
        self.assertEqual(self.lib._cdll.stub_last_args().contents.kv_scale_device, scale.data_ptr())
        self.plan.build_schedule(**dict(self.args, q=(self.args["q"][..., :512], self.args["q"][..., 512:])),
                                 kv_scale=scale)
        got = self.lib._cdll.stub_last_args().contents
        self.assertEqual((got.q_pe, got.kv_scale_device), (self.args["q"].data_ptr() + 1024, scale.data_ptr()))

    def test_view_refusals(self):
        a, bf = self.args, torch.bfloat16
        self.assertTrue(self.refusal(True, q=torch.zeros((3, 2, 16, 580), dtype=bf)[..., :576]).startswith(
            "q: stride per head is 580 elements"))
        self.assertTrue(self.refusal(True, q=torch.zeros((3, 2, 16, 1152), dtype=bf)[..., ::2]).startswith(
            "q: the last dimension has stride 2"))
        self.assertTrue(self.refusal(True, out=torch.zeros((3, 2, 16, 512), dtype=bf).transpose(0, 1).as_strided(
            (3, 2, 16, 512), (8192, 4096, 256, 1))).startswith("out: strides [8192, 4096, 256, 1] (shape [3, 2, 16, "
                                                               "512]) make rows overlap"))
        self.assertTrue(self.refusal(True, q=torch.zeros((1, 1, 1, 576), dtype=bf).expand(3, 2, 16, 576)).startswith(
            "q: strides [0, 0, 0, 1] (shape [3, 2, 16, 576]): every row at one address"))
        self.assertTrue(self.refusal(True, lse=torch.zeros((3, 2, 16)), heads_first=True).startswith(
            "lse: expected shape [3, 16, 2], got [3, 2, 16]"))
        q = a["q"]
        self.assertTrue(self.refusal(True, q=q[..., :512], q_pe=q[..., 512:544]).startswith(
            "q[1] (q_pe): expected shape [3, 2, 16, 64] or [6, 16, 64], got [3, 2, 16, 32]"))
        self.assertTrue(self.refusal(True, q=q[..., :512], q_pe=q[..., 508:572]).startswith(
            "q[1] (q_pe): data pointer"))
        self.assertEqual(self.refusal(True, kv_scale=torch.ones((), dtype=torch.float64)),
                         "kv_scale: expected dtype float32, got float64")
        self.assertEqual(self.refusal(True, kv_scale=torch.ones((2,))),
                         "kv_scale: expected one element (shape [] or [1]), got shape [2]")
        self.assertTrue(self.refusal(True, kv_scale=1.0).startswith("kv_scale: expected a device tensor"))

    def test_plan_without_views_refuses_them(self):
        # the same forms on a plan created with views=False: the fast and
        # general paths refuse each with the same message, naming it, and
        # run() never reaches C; contiguous calls take the fast path
        self.plan = self.rt.plan(16, sq=2, page_size=64, q_dtype=torch.bfloat16, kv_dtype=torch.bfloat16,
                                 softmax_scale=0.0417, max_batch=8)
        self.plan._streams = _NoStreams()
        tail = ("cannot be passed to this plan: it was created with views=False (its kernels were built for "
                "contiguous tensors only); create the plan with views=True (Runtime.plan(..., views=True))")
        for what, changes, strides in self.view_cases():
            if strides == ((0, 0, 0),) * 4 and "q_pe" not in changes:
                continue  # contiguous after all (its heads_first is refused by run(): below)
            with self.subTest(what=what):
                self.assertIn(tail, self.refusal(True, **changes))
                changes = dict(changes)
                kwargs = {"lse_layout": "heads_first"} if changes.pop("heads_first", False) else {}
                if "q_pe" in changes:
                    changes["q"] = (changes["q"], changes.pop("q_pe"))
                before = self.lib._cdll.stub_run_count()
                with self.assertRaises(mlatune.Error) as cm:
                    self.plan.run(**dict(self.args, **changes), **kwargs)
                self.assertIn(tail, cm.exception.message)
                self.assertEqual(self.lib._cdll.stub_run_count(), before)
        q = self.args["q"]
        for kwargs, start in ((dict(q=(q[..., :512], q[..., 512:])), "q: the pair (ql_nope, q_pe) "),
                              (dict(kv_scale=torch.ones((), dtype=torch.float32)),
                               "kv_scale: a scale read from device memory (a tensor) "),
                              (dict(lse=torch.zeros((3, 16, 2)), lse_layout="heads_first"),
                               'lse_layout: "heads_first" (lse [B, N, Sq]) ')):
            with self.subTest(start=start):
                with self.assertRaises(mlatune.Error) as cm:
                    self.plan.run(**dict(self.args, **kwargs))
                self.assertTrue(cm.exception.message.startswith(start + tail), cm.exception.message)
                with self.assertRaises(mlatune.Error) as cm:
                    self.plan.build_schedule(**dict(self.args, **kwargs))
                self.assertTrue(cm.exception.message.startswith(start + tail), cm.exception.message)
        self.assertEqual(self.refusal(True, kv_scale=torch.ones((), dtype=torch.float32)),
                         "kv_scale: a scale read from device memory (a tensor) " + tail +
                         ", or give the plan its scale (Runtime.plan(kv_scale=...))")
        before = self.lib._cdll.stub_run_count()
        self.plan.run(**self.args)
        self.plan.run(**self.args, lse_layout="tokens_first")
        self.assertEqual(self.lib._cdll.stub_run_count(), before + 2)

    def test_wrong_device(self):
        torch.Tensor.get_device = lambda self: -1 if self.dtype == torch.float32 else 0  # lse "on the host"
        self.assertEqual(self.refusal(), "lse: on cpu, expected cuda:0 (the runtime's device)")

    def test_fp8_kv_as_uint8(self):
        plan = self.rt.plan(16, sq=1, page_size=16, q_dtype=torch.bfloat16, kv_dtype="fp8", softmax_scale=0.0417,
                            kv_scale=2.0, max_batch=8)
        plan._streams = _NoStreams()
        args = torch_args(plan)
        self.assertIs(args["kv_cache"].dtype, torch.uint8)
        plan.run(**args)
        self.assertEqual(self.lib._cdll.stub_last_args().contents.kv_cache, args["kv_cache"].data_ptr())
        fp8 = getattr(torch, "float8_e4m3fn", None)
        if fp8 is not None:
            plan.run(**dict(args, kv_cache=args["kv_cache"].view(fp8)))

    def test_mixed_tensor_kinds_take_the_general_path(self):
        a = dict(self.args)
        q = a["q"]
        a["q"] = mlatune.DeviceArray(q.data_ptr(), tuple(q.shape), "bfloat16", device=0)
        self.plan.run(**a)
        self.assertEqual(self.lib._cdll.stub_last_args().contents.q, q.data_ptr())

    def test_tensors_changed_in_place_after_a_good_call(self):
        """run() remembers the layouts of its last checked call
        (_layouts.py); torch's in-place operations on the same tensor
        objects must be seen: refused with the first call's message, or
        taken with their new pointers and strides.  Through the Python
        reads (a kv scale tensor: a form they remember) and through a guard
        (the stand-in of TensorGuards, which torch 1.x lacks) on the
        commonest form."""
        scale = torch.ones((), dtype=torch.float32)
        self.changed_in_place(dict(self.args, kv_scale=scale), None)
        self.changed_in_place(torch_args(self.plan), support.FactsGuard)

    def changed_in_place(self, a, make_guard):
        plan, last = self.plan, lambda: self.lib._cdll.stub_last_args().contents
        plan._make_guard = make_guard
        plan._last = None
        checked = []
        remember = type(plan)._remember.__get__(plan)  # called by every call that took the checks
        plan._remember = lambda *args: checked.append(1) or remember(*args)

        def refused(message_start):
            before = self.lib._cdll.stub_run_count()
            with self.assertRaises(mlatune.Error) as cm:
                plan.run(**a)
            self.assertTrue(cm.exception.message.startswith(message_start), cm.exception.message)
            self.assertEqual(self.lib._cdll.stub_run_count(), before, "a refused call reached C")

        plan.run(**a)
        plan.run(**a)
        self.assertEqual(len(checked), 1, "the second call of the same tensors was checked again")
        q, seq_lens, block_table, lse = a["q"], a["seq_lens"], a["block_table"], a["lse"]
        # resize_ (leaves _version as it was)
        q.resize_(3, 2, 16, 512)
        refused("q: expected shape")
        q.resize_(3, 2, 16, 576)
        plan.run(**a)
        # `.data =` another dtype: same pointer, shape, strides and _version
        seq_lens.data = seq_lens.view(torch.float32)
        refused("seq_lens: expected dtype int32, got float32")
        seq_lens.data = seq_lens.view(torch.int32)
        plan.run(**a)
        # transpose_: the same tensor, not contiguous
        block_table.transpose_(0, 1)
        refused("block_table: expected shape" if block_table.shape[0] < 3 else "block_table: not contiguous")
        block_table.transpose_(0, 1)
        plan.run(**a)
        # as_strided_ over its own storage: the same shape, token-major rows
        # (a view a views plan takes): the new strides reach C
        q.as_strided_((3, 2, 16, 576), (16 * 576, 3 * 16 * 576, 576, 1))
        plan.run(**a)
        self.assertEqual(tuple(last().q_strides), (16 * 576, 3 * 16 * 576, 576))
        # set_ to other storage: the new pointer reaches C
        lse.set_(torch.empty((3, 2, 16), dtype=torch.float32))
        plan.run(**a)
        self.assertEqual(last().lse, lse.data_ptr())
        self.assertEqual(tuple(last().lse_strides), (0, 0, 0))
        # a storage offset that breaks the alignment
        flat = torch.zeros(3 * 2 * 16 + 1, dtype=torch.float32)
        lse.set_(flat.untyped_storage() if hasattr(flat, "untyped_storage") else flat.storage(), 1, (3, 2, 16),
                 (32, 16, 1))
        if flat.data_ptr() % 4 == 0:
            plan.run(**a)  # 4-byte aligned: fine for lse
        # (a storage of its own, 4 elements longer: torch 2.11 refuses a
        # view past its storage's end, which `out`'s own storage would be)
        out, spare = a["out"], torch.zeros(3 * 2 * 16 * 512 + 4, dtype=a["out"].dtype)
        out.set_(spare.untyped_storage() if hasattr(spare, "untyped_storage") else spare.storage(), 4,
                 (3, 2, 16, 512), (2 * 16 * 512, 16 * 512, 512, 1))  # 8 bytes in
        if (out.data_ptr() - 8) % 16 == 0:
            refused("out: data pointer")


if __name__ == "__main__":
    unittest.main()
