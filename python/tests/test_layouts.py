"""run()'s remembered layouts (mlatune/_layouts.py), against the stub
libmlatune: a call with the layouts of the last checked call skips the
checks and hands C its own pointers; a tensor changed in place after a good
call (shape, dtype, device, strides, data pointer) is checked again and
refused with the same message as on a first call, nothing reaching C.

No torch needed: the tensors are support.FakeTorchTensors (torch-shaped
objects whose facts can be changed in place, as resize_, as_strided_,
set_ and `.data =` change a torch tensor's).  Each case runs twice: with
the layouts read in Python (what a torch without tensor guards gets) and
through a guard object (the path torch's TensorGuards takes), here a
Python stand-in with the same contract (support.FactsGuard).  test_torch_cpu does it on real
torch tensors with torch's own in-place operations.
"""

import unittest

import support
from support import FakeTorchTensor

import mlatune
from mlatune import Status, _layouts
from mlatune import plan as plan_module
from mlatune._checks import ZERO3


class RememberedLayoutTest(unittest.TestCase):
    """A views=True plan (16 heads, Sq 2, page 64, max_batch 8) called in
    vLLM's form with every optional tensor: q as the pair, a workspace, a
    schedule and a kv scale tensor; layouts read in Python."""

    make_guard = None

    def setUp(self):
        self.lib = support.stub_library()
        if self.lib is None:
            self.skipTest("no C compiler or mlatune.h: cannot build the stub library")
        self.rt = mlatune.Runtime(library=self.lib)
        self.addCleanup(self.rt.close)
        self.plan = self.plan_of(views=True)
        self.args = self.call_args(self.plan)

    def plan_of(self, views):
        plan = self.rt.plan(16, sq=2, page_size=64, q_dtype="bfloat16", kv_dtype="bfloat16",
                            softmax_scale=0.0417, max_batch=8, views=views)
        plan._make_guard = self.make_guard
        # count the calls that take the checks
        plan.checked = 0
        checks = plan._pointers

        def counted(*args, **kwargs):
            plan.checked += 1
            return checks(*args, **kwargs)
        plan._pointers = counted
        return plan

    def call_args(self, plan, pair=True):
        args = support.stub_call_args(plan, batch=3, torch_shaped=True)
        pool = support.PointerPool(start=0x7E0000000000)
        if pair:
            args["q"] = (FakeTorchTensor(pool.take(3 * 2 * 16 * 512 * 2), (3, 2, 16, 512), "bfloat16"),
                         FakeTorchTensor(pool.take(3 * 2 * 16 * 64 * 2), (3, 2, 16, 64), "bfloat16"))
            args["kv_scale"] = FakeTorchTensor(pool.take(4), (), "float32")
        return args

    def tensors(self):
        """(name, tensor) for every tensor of the call."""
        a = self.args
        named = [(n, a[n]) for n in ("kv_cache", "block_table", "seq_lens", "out", "lse", "workspace", "schedule",
                                     "kv_scale") if n in a]
        if isinstance(a["q"], tuple):
            return [("q[0] (ql_nope)", a["q"][0]), ("q[1] (q_pe)", a["q"][1])] + named
        return [("q", a["q"])] + named

    def last_args(self):
        return self.lib._cdll.stub_last_args().contents

    def runs(self):
        return self.lib._cdll.stub_run_count()

    def fresh_message(self, args, what=""):
        """The message a plan that has seen no call gives for args."""
        plan = self.plan_of(self.plan.problem.views)
        with self.assertRaises(mlatune.Error, msg=what) as cm:
            plan.run(**args)
        self.assertEqual(plan.checked, 1)
        return cm.exception.message

    # ------------------------------------------------------------------

    def test_a_call_of_the_same_layouts_skips_the_checks(self):
        self.plan.run(**self.args)
        self.plan.run(**self.args)
        self.plan.run(**self.call_args(self.plan))  # other objects, the same layouts
        self.assertEqual(self.plan.checked, 1)
        kind = "guard" if self.make_guard else "key"
        self.assertIsNotNone(getattr(self.plan._last, kind), "the layouts were not remembered as expected")

    def test_new_pointers_reach_c(self):
        self.plan.run(**self.args)
        for name, t in self.tensors():
            t.ptr += 256
        self.plan.run(**self.args)
        self.assertEqual(self.plan.checked, 1)
        got = self.last_args()
        a = self.args
        q, q_pe = a["q"] if isinstance(a["q"], tuple) else (a["q"], None)
        self.assertEqual((got.q, got.q_pe or 0), (q.ptr, q_pe.ptr if q_pe is not None else 0))
        for field, name in (("kv_cache", "kv_cache"), ("block_table", "block_table"), ("seq_lens", "seq_lens"),
                            ("out", "out"), ("lse", "lse"), ("workspace", "workspace"),
                            ("kv_scale_device", "kv_scale"), ("schedule", "schedule")):
            self.assertEqual(getattr(got, field) or 0, a[name].ptr if name in a else 0, field)

    def refused_after_a_good_call(self, what, name, t, change, undo):
        """A good call, t changed in place by change(); the call must raise
        the message a first call gives, reach no C, and work again after
        undo()."""
        self.plan.run(**self.args)
        checked = self.plan.checked
        change()
        want = self.fresh_message(self.args, f"{name}: {what}")
        before = self.runs()
        with self.assertRaises(mlatune.Error, msg=f"{name}: {what} changed in place went through") as cm:
            self.plan.run(**self.args)
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
        self.assertEqual(cm.exception.message, want, f"{name}: {what}")
        self.assertTrue(cm.exception.message.startswith(name.split(" ")[0]), cm.exception.message)
        self.assertEqual(self.runs(), before, f"{name}: {what}: a refused call reached C")
        self.assertEqual(self.plan.checked, checked + 1, f"{name}: {what}: not checked again")
        undo()
        self.plan.run(**self.args)

    def test_each_tensor_changed_in_place_is_checked_again(self):
        wrong_dtype = {"block_table": "int64", "seq_lens": "int64", "lse": "float16", "kv_scale": "float16"}
        for name, t in self.tensors():
            shape, dtype, strides, ptr = t.shape, t.dtype, t.strides, t.ptr
            align = 4 if name in ("block_table", "seq_lens", "lse", "kv_scale") else 16

            def restore(t=t, shape=shape, dtype=dtype, strides=strides, ptr=ptr, device=t.device):
                t.shape, t.dtype, t.strides, t.ptr, t.device = shape, dtype, strides, ptr, device

            def set_(t=t, **fields):
                return lambda: [setattr(t, k, v) for k, v in fields.items()]

            self.refused_after_a_good_call("device", name, t, set_(device=1), restore)
            self.refused_after_a_good_call("data pointer", name, t, set_(ptr=ptr + align // 2), restore)
            if name not in ("workspace", "schedule"):  # any dtype and shape: below
                self.refused_after_a_good_call("shape", name, t, set_(shape=shape + (2,)), restore)
                self.refused_after_a_good_call("dtype", name, t, set_(dtype=wrong_dtype.get(name, "float16")),
                                               restore)
            if name == "lse":  # rows of one element: strides that make two tokens' rows one
                self.refused_after_a_good_call("strides", name, t, set_(strides=(16, 16, 1)), restore)
            elif shape:
                # the last dimension strided: a row's elements apart (q, out)
                # or not contiguous (the others)
                wide = list(t.stride())
                wide = [s * 2 for s in wide[:-1]] + [2]
                self.refused_after_a_good_call("strides", name, t, set_(strides=tuple(wide)), restore)

    def test_workspace_and_schedule_sizes_are_read_again(self):
        a = self.args
        self.plan.run(**a)
        a["workspace"].dtype = "int32"  # 4 bytes an element now
        self.plan.run(**a)
        self.assertEqual(self.last_args().workspace_size, 4 * a["workspace"].shape[0])
        a["workspace"].shape = (16,)  # 64 bytes: C refuses it, with the size it was given
        with self.assertRaises(mlatune.Error) as cm:
            self.plan.run(**a)
        self.assertIn("64 given", cm.exception.message)
        self.assertEqual(self.plan.checked, 3)
        if "schedule" not in a:
            return
        a["schedule"].shape = (100,)
        self.assertEqual(self.fresh_message(a), "schedule: 100 bytes, the plan needs 512")
        with self.assertRaises(mlatune.Error) as cm:
            self.plan.run(**a)
        self.assertEqual(cm.exception.message, "schedule: 100 bytes, the plan needs 512")

    def test_restrided_in_place_sends_the_new_strides(self):
        self.plan.run(**self.args)
        self.assertEqual(tuple(self.last_args().out_strides), ZERO3)
        out = self.args["out"]
        out.strides = (2 * 16 * 1024, 16 * 1024, 1024, 1)  # rows of 512 in rows of 1024
        self.plan.run(**self.args)
        self.assertEqual(tuple(self.last_args().out_strides), (2 * 16 * 1024, 16 * 1024, 1024))
        self.assertEqual(self.plan.checked, 2)

    def test_optional_arguments_and_layout_change_the_form(self):
        self.plan.run(**self.args)
        for change in (dict(schedule=None), dict(kv_scale=None),
                       dict(q=self.args["q"][0]), dict(lse_layout="tokens_first")):
            args = dict(self.args, **change)
            if "q" in change:  # q whole: a [3, 2, 16, 576] tensor
                args["q"] = FakeTorchTensor(0x7D0000000000, (3, 2, 16, 576), "bfloat16")
            checked = self.plan.checked
            self.plan.run(**args)
            self.assertEqual(self.plan.checked, checked + 1, f"{change}: not checked")
            got = self.last_args()
            self.assertEqual(got.schedule or 0, 0 if args["schedule"] is None else args["schedule"].ptr)
            self.assertEqual(got.kv_scale_device or 0, 0 if args.get("kv_scale") is None else args["kv_scale"].ptr)
            self.assertEqual(got.q_pe or 0, 0 if "q" in change else args["q"][1].ptr)

    def test_heads_first_is_part_of_the_layout(self):
        args = dict(self.args, lse=FakeTorchTensor(0x7D0000000000, (3, 16, 2), "float32"))
        self.plan.run(**args, lse_layout="heads_first")
        self.assertEqual(tuple(self.last_args().lse_strides), (32, 1, 2))
        with self.assertRaises(mlatune.Error) as cm:  # the same tensors, lse now read as [B, Sq, N]
            self.plan.run(**args)
        self.assertTrue(cm.exception.message.startswith("lse: expected shape"), cm.exception.message)

    def test_a_view_is_refused_by_a_plan_without_views_after_a_good_call(self):
        plan = self.plan_of(views=False)
        args = self.call_args(plan, pair=False)
        plan.run(**args)
        plan.run(**args)
        self.assertEqual(plan.checked, 1)
        q = args["q"]
        q.strides = (2 * 16 * 640, 16 * 640, 640, 1)  # a slice of rows of 640
        with self.assertRaises(mlatune.Error) as cm:
            plan.run(**args)
        self.assertTrue(cm.exception.message.startswith("q: a strided view"), cm.exception.message)
        self.assertIn("views=False", cm.exception.message)

    def test_a_pair_is_not_taken_for_one_tensor(self):
        for views in (True, False):
            plan = self.plan_of(views=views)
            args = self.call_args(plan, pair=False)
            plan.run(**args)
            with self.assertRaises(mlatune.Error) as cm:
                plan.run(**dict(args, q=(args["q"], None)))
            self.assertTrue(cm.exception.message.startswith("q[1] (q_pe): missing (None)" if views else
                                                            "q: the pair (ql_nope, q_pe) cannot be passed"),
                            cm.exception.message)

    def test_a_refused_call_is_not_remembered(self):
        self.plan.run(**self.args)
        bad = dict(self.args, seq_lens=FakeTorchTensor(0x7D0000000000, (3,), "int64"))
        for _ in range(2):
            with self.assertRaises(mlatune.Error):
                self.plan.run(**bad)
        self.assertEqual(self.plan.checked, 3)
        self.plan.run(**self.args)
        self.assertEqual(self.plan.checked, 3)  # the good layouts are still those remembered


class RememberedLayoutThroughGuardsTest(RememberedLayoutTest):
    """The same, through a guard object (torch's TensorGuards' contract)."""

    make_guard = support.FactsGuard

    def test_objects_a_guard_refuses_are_read_in_python(self):
        def no_guard(tensors):
            raise TypeError("expected Tensor()")
        self.plan._make_guard = no_guard
        self.plan.run(**self.args)
        self.assertIsNone(self.plan._last.guard)
        self.assertIsNotNone(self.plan._last.key)
        self.plan.run(**self.args)
        self.assertEqual(self.plan.checked, 1)


class _EngineForm:
    """Mixin: the tests above on one of the forms run() spells out instead
    of building them with _form() (plan.py: _WS, _PAIR_WS, _PAIR_WS_KS):
    a call giving a workspace and no schedule.  The form taken must be the
    spelled-out one (the same object), and every change above must still
    be caught through it."""

    form = None
    pair = True
    kv_scale = True

    def call_args(self, plan, pair=True):
        args = RememberedLayoutTest.call_args(self, plan, pair=pair and self.pair)
        del args["schedule"]
        if not self.kv_scale:
            args.pop("kv_scale", None)
        return args

    def test_the_spelled_out_form_is_taken(self):
        self.plan.run(**self.args)
        self.assertIs(self.plan._last.form, self.form)
        self.plan.run(**self.args)
        self.assertEqual(self.plan.checked, 1)

    def test_optional_arguments_and_layout_change_the_form(self):
        # each argument given besides (or taken away from) the remembered
        # call's, over the same tensors: a new form, checked, its own
        # pointers reaching C
        pool = support.PointerPool(start=0x7A0000000000)
        schedule = FakeTorchTensor(pool.take(512), (512,), "uint8")
        scale = FakeTorchTensor(pool.take(4), (), "float32")
        whole = FakeTorchTensor(pool.take(3 * 2 * 16 * 576 * 2), (3, 2, 16, 576), "bfloat16")
        pair = (FakeTorchTensor(pool.take(3 * 2 * 16 * 512 * 2), (3, 2, 16, 512), "bfloat16"),
                FakeTorchTensor(pool.take(3 * 2 * 16 * 64 * 2), (3, 2, 16, 64), "bfloat16"))
        changes = [dict(schedule=schedule), dict(kv_scale=None if self.kv_scale else scale),
                   dict(q=whole if self.pair else pair), dict(lse_layout="tokens_first"), dict(workspace=None)]
        for change in changes:
            self.plan.run(**self.args)
            args = dict(self.args, **change)
            checked = self.plan.checked
            try:
                self.plan.run(**args)
            except mlatune.Error as e:  # C refuses a missing workspace: the package checked it first
                self.assertEqual(change, dict(workspace=None), e.message)
                self.assertIn("workspace", e.message)
            self.assertEqual(self.plan.checked, checked + 1, f"{change}: not checked")
            if "workspace" in change:
                continue
            got = self.last_args()
            q = args["q"]
            self.assertEqual(got.q, (q[0] if isinstance(q, (tuple, list)) else q).ptr, change)
            self.assertEqual(got.q_pe or 0, q[1].ptr if isinstance(q, (tuple, list)) else 0, change)
            self.assertEqual(got.schedule or 0, args["schedule"].ptr if args.get("schedule") else 0, change)
            self.assertEqual(got.kv_scale_device or 0, args["kv_scale"].ptr if args.get("kv_scale") else 0, change)

    def test_a_list_pair_has_the_tuple_pair_form(self):
        # a list is not spelled out: _form() makes the same form of it
        if not self.pair:
            self.skipTest("q whole")
        self.plan.run(**self.args)
        self.plan.run(**dict(self.args, q=list(self.args["q"])))
        self.assertEqual(self.plan.checked, 1)


class ContiguousFormTest(_EngineForm, RememberedLayoutTest):
    """q whole and contiguous, a workspace (the README's call, bench's run)."""
    form = plan_module._WS
    pair = kv_scale = False


class ContiguousFormThroughGuardsTest(_EngineForm, RememberedLayoutThroughGuardsTest):
    form = plan_module._WS
    pair = kv_scale = False


class PairFormTest(_EngineForm, RememberedLayoutTest):
    """vLLM's pair and a workspace (the example's bf16 KV call)."""
    form = plan_module._PAIR_WS
    kv_scale = False


class PairFormThroughGuardsTest(_EngineForm, RememberedLayoutThroughGuardsTest):
    form = plan_module._PAIR_WS
    kv_scale = False


class PairScaleFormTest(_EngineForm, RememberedLayoutTest):
    """vLLM's pair, a workspace and the kv scale tensor (fp8 KV)."""
    form = plan_module._PAIR_WS_KS


class PairScaleFormThroughGuardsTest(_EngineForm, RememberedLayoutThroughGuardsTest):
    form = plan_module._PAIR_WS_KS


class _StubPlan(unittest.TestCase):
    """A plan of the stub library, nothing remembered yet."""

    def setUp(self):
        lib = support.stub_library()
        if lib is None:
            self.skipTest("no C compiler or mlatune.h: cannot build the stub library")
        rt = mlatune.Runtime(library=lib)
        self.addCleanup(rt.close)
        self.plan = rt.plan(16, sq=2, page_size=64, q_dtype="bfloat16", kv_dtype="bfloat16", softmax_scale=0.0417,
                            max_batch=8)


class NotTorchShapedTest(_StubPlan):

    def test_cuda_array_interface_objects_are_checked_every_call(self):
        plan = self.plan
        args = support.stub_call_args(plan, batch=3)
        plan.run(**args)
        self.assertIsNone(plan._last)
        with self.assertRaises(AttributeError):
            _layouts.read_layouts([args["q"]])


class TorchShapedFirstTest(_StubPlan):

    def test_torch_shaped_objects_leave_the_guards_to_a_torch_call(self):
        # a first call of torch-shaped objects (not torch tensors) is read
        # in Python, and does not decide for the plan's later torch calls
        plan = self.plan
        args = support.stub_call_args(plan, batch=3, torch_shaped=True)
        del args["schedule"]
        plan.run(**args)
        self.assertIsNotNone(plan._last.key)
        self.assertIs(plan._make_guard, plan_module._UNSET)


class TorchGuardsTest(unittest.TestCase):
    """_layouts.tensor_guards() with the installed torch: where torch has
    TensorGuards, they must be taken (the self-test passed); without
    them, None (the Python reads)."""

    def test_tensor_guards_of_this_torch(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        has = getattr(getattr(getattr(torch._C, "_dynamo", None), "guards", None), "TensorGuards", None)
        make = _layouts._tensor_guards()
        if has is None:
            self.assertIsNone(make)
            return
        self.assertIsNotNone(make, f"torch {torch.__version__} has TensorGuards, but they failed the self-test "
                                   f"or take other arguments: run() reads layouts in Python (slower)")
        t = torch.zeros((2, 3), dtype=torch.bfloat16)
        guard = make((t, torch.zeros((4,), dtype=torch.int32)))
        self.assertTrue(guard.check(t, torch.ones((4,), dtype=torch.int32)))
        t.data = t.view(torch.float16)  # same pointer, shape, strides and _version: another dtype
        self.assertFalse(guard.check(t, torch.ones((4,), dtype=torch.int32)))


if __name__ == "__main__":
    unittest.main()
