"""The package against the real libmlatune ($MLATUNE_LIBRARY), no torch.

Without a GPU, mlt_runtime_create fails (MLT_ERR_NO_BACKEND or
MLT_ERR_NO_DEVICE): the tests that need a runtime skip and say why, with
the library's own message.  Where the library offers a CPU path, it is
used:
  * MLA_TUNE_BACKEND=hip-cpu (the CPU emulation backend), when the library
    honours it: a whole decode on host memory, checked against a reference
    computed here in plain Python, then the same call through views (q in
    two parts, strided q / out, lse heads first, the kv scale in device
    memory) on a plan created with views=True equal bit for bit, a device
    scale of 0.5 against the reference, and the library's own refusal of
    views on a plan created without them;
  * a stub CUDA driver ($MLA_TUNE_STUB_CUDA, or tests/stub_libcuda.c of the
    repository built here) loaded through MLA_TUNE_CUDA_DRIVER: a runtime
    that reports an H100, so that options and errors are seen to cross the
    boundary (plan creation then fails where the stub refuses to load code),
    and the prefill form is chosen by the flop rule (no DB).
"""

import contextlib
import ctypes
import math
import os
import random
import struct
import unittest

import support

import mlatune
from mlatune import LENGTHS_UNKNOWN, Status
from mlatune._capi import DecodeProblem
from mlatune.plan import _ARGS

LIB = support.real_library()
NO_LIB = "MLATUNE_LIBRARY is not set (ctest sets it to the built libmlatune)"


@contextlib.contextmanager
def environment(**changes):
    """Sets (or with None, removes) environment variables for the block."""
    old = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def stub_cuda_driver():
    path = os.environ.get("MLA_TUNE_STUB_CUDA")
    if path and os.path.exists(path):
        return path
    src = os.path.join(support.REPO, "tests", "stub_libcuda.c")
    if support.compiler() is None or not os.path.exists(src):
        return None
    out = os.path.join(support.temp_dir(), "libcuda_stub.so")
    if not os.path.exists(out):
        import subprocess
        r = subprocess.run([support.compiler(), "-shared", "-fPIC", "-o", out, src], capture_output=True, text=True)
        if r.returncode:
            return None
    return out


@unittest.skipIf(LIB is None, NO_LIB)
class RealLibraryTest(unittest.TestCase):

    def test_functions_and_status_strings(self):
        self.assertEqual(LIB.status_string(Status.ERR_INVALID_ARGUMENT), "invalid argument")
        self.assertEqual(LIB.status_string(Status.OK), "ok")
        self.assertEqual(LIB.version, mlatune.HEADER_VERSION)

    def test_runtime_or_a_clear_reason(self):
        """Creating a runtime succeeds, or fails for want of a GPU with the
        library's message: never silently."""
        try:
            rt = mlatune.Runtime(library=LIB, cache_dir="")
        except mlatune.Error as e:
            self.assertIn(e.status, (Status.ERR_NO_BACKEND, Status.ERR_NO_DEVICE), str(e))
            self.assertTrue(e.message, "the error carries no message")
            self.skipTest(f"no GPU runtime here: {e.message}")
        self.assertTrue(rt.arch)
        rt.close()

    def test_explicit_missing_database_is_an_error_naming_it(self):
        driver = stub_cuda_driver()
        if driver is None:
            self.skipTest("no stub CUDA driver (MLA_TUNE_STUB_CUDA unset and tests/stub_libcuda.c not buildable)")
        missing = os.path.join(support.temp_dir(), "no-such.db")
        with environment(MLA_TUNE_CUDA_DRIVER=driver):
            try:
                with self.assertRaises(mlatune.Error) as cm:
                    mlatune.Runtime(library=LIB, user_db=missing, cache_dir="")
            except AssertionError:
                raise
        e = cm.exception
        if e.status in (Status.ERR_NO_BACKEND, Status.ERR_NO_DEVICE):
            self.skipTest(f"the stub driver was not used: {e.message}")
        self.assertEqual(e.status, Status.ERR_DATABASE)
        self.assertIn(missing, e.message)

    def test_stub_driver_runtime_and_plan_errors(self):
        driver = stub_cuda_driver()
        if driver is None:
            self.skipTest("no stub CUDA driver (MLA_TUNE_STUB_CUDA unset and tests/stub_libcuda.c not buildable)")
        data = os.path.join(support.temp_dir(), "xdg-data")  # no default user DB
        with environment(MLA_TUNE_CUDA_DRIVER=driver, XDG_DATA_HOME=data, MLA_TUNE_DB=None,
                         MLA_TUNE_SYSTEM_DB=None):
            try:
                rt = mlatune.Runtime(library=LIB, cache_dir="", log_level=mlatune.LogLevel.QUIET)
            except mlatune.Error as e:
                self.skipTest(f"runtime over the stub driver failed (a HIP device answered first?): {e.message}")
            with self.assertRaises(mlatune.Error) as cm:
                mlatune.Runtime(device=3, library=LIB, cache_dir="")
            self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
            self.assertIn("device 3 does not exist", cm.exception.message)
            self.assertEqual(rt.arch, "sm_90")
            # the stub driver loads modules and runs launches (doing
            # nothing): a plan is made; a call C refuses must bring back
            # C's message (mlt_last_error), not only the status string
            plan = rt.plan(16, page_size=64, q_dtype="bf16", kv_dtype="bf16", softmax_scale=0.0417, max_batch=8)
            with self.assertRaises(mlatune.Error) as cm:
                plan.run_raw(9, 256, 256, 256, 256, 256, 256, 256, plan.workspace_size)
            self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
            self.assertIn("batch 9 outside 1..8", cm.exception.message)
            self.assertNotEqual(cm.exception.message, LIB.status_string(cm.exception.status),
                                "only the status string came back, not mlt_last_error()")
            # a problem the runtime refuses before compiling
            with self.assertRaises(mlatune.Error) as cm:
                rt.plan(200, page_size=64, q_dtype="bf16", kv_dtype="bf16", softmax_scale=0.0417, max_batch=8)
            self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
            self.assertIn("head count 200 outside 1..128", cm.exception.message)
            with self.assertRaises(mlatune.Error) as cm:
                rt.alloc(1024)
            self.assertIn("not supported by the stub driver", cm.exception.message)
            # the prefill form: no crossover measured (no DB), so the flop
            # rule, MHA from sq 168 at context 4096; C's checks come back
            f = rt.choose_form(128, 200, 4096)
            self.assertEqual((f.form, f.measured, f.source, f.boundary_sq), (mlatune.PrefillForm.MHA, False, "rule", 168))
            self.assertIn("no crossover measured for sm_90 with bf16/bf16", f.why)
            self.assertIs(rt.choose_form(128, 167, 4096).form, mlatune.PrefillForm.MQA)
            with self.assertRaises(mlatune.Error) as cm:
                rt.choose_form(128, 2000, 4096)
            self.assertEqual(cm.exception.message, "sq 2000 outside 1..1024 (the new tokens of the chunk)")
            rt.close()


# ----------------------------------------------------------------------
# a whole decode on the CPU emulation backend, when the library has it

def bf16_bits(x):
    """Round-to-nearest-even float -> bfloat16 bits."""
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def reference(q, keys, lens, sq, n, d, dl, scale):
    """out[b][t][h] (lists of Dl floats) and lse[b][t][h], by the rules of
    README's "The computation": token t of request b sees keys
    j < L_b - Sq + t + 1; no keys: out 0, lse -inf."""
    out, lse = [], []
    for b, length in enumerate(lens):
        ob, lb = [], []
        for t in range(sq):
            limit = length - sq + t + 1
            ot, lt = [], []
            for h in range(n):
                if limit <= 0:
                    ot.append([0.0] * dl)
                    lt.append(-math.inf)
                    continue
                qv = q[b][t][h]
                s = [scale * sum(qv[i] * keys[b][j][i] for i in range(d)) for j in range(limit)]
                m = max(s)
                w = [math.exp(x - m) for x in s]
                total = sum(w)
                ot.append([sum(w[j] * keys[b][j][i] for j in range(limit)) / total for i in range(dl)])
                lt.append(m + math.log(total))
            ob.append(ot)
            lb.append(lt)
        out.append(ob)
        lse.append(lb)
    return out, lse


@unittest.skipIf(LIB is None, NO_LIB)
class EmulatedDecodeTest(unittest.TestCase):
    """MLA_TUNE_BACKEND=hip-cpu: skipped, saying so, where the library does
    not offer it."""

    def test_decode_on_the_cpu_backend(self):
        with environment(MLA_TUNE_BACKEND="hip-cpu"):
            try:
                rt = mlatune.Runtime(library=LIB, cache_dir="", log_level=mlatune.LogLevel.QUIET)
            except mlatune.Error as e:
                self.skipTest(f"no runtime with MLA_TUNE_BACKEND=hip-cpu (the library does not honour it "
                              f"here): {e.message}")
        if not rt.arch.startswith("gfx"):
            rt.close()
            self.skipTest(f"MLA_TUNE_BACKEND=hip-cpu gave a {rt.arch} runtime: a GPU, not the emulation")
        n, sq, d, dl, page = 2, 2, 576, 512, 16
        lens = [1, 21, 40]  # one request with fewer keys than Sq
        batch, blocks = len(lens), 3
        scale = d ** -0.5
        rng = random.Random(7)
        plan = rt.plan(n, sq=sq, page_size=page, q_dtype="bf16", kv_dtype="bf16", softmax_scale=scale,
                       max_batch=batch)
        # the views: kernels that place rows through strides
        vplan = rt.plan(n, sq=sq, page_size=page, q_dtype="bf16", kv_dtype="bf16", softmax_scale=scale,
                        max_batch=batch, views=True)
        ws_size = max(plan.workspace_size, vplan.workspace_size, 16)
        q_bits = [[[[bf16_bits(rng.uniform(-1, 1)) for _ in range(d)] for _ in range(n)] for _ in range(sq)]
                  for _ in range(batch)]
        pages = batch * blocks
        kv_bits = [[[bf16_bits(rng.uniform(-1, 1)) for _ in range(d)] for _ in range(page)] for _ in range(pages)]
        table = list(range(pages))
        rng.shuffle(table)
        table = [table[b * blocks:(b + 1) * blocks] for b in range(batch)]

        def put(values, fmt):
            data = struct.pack(f"<{len(values)}{fmt}", *values)
            ptr = rt.alloc(len(data))
            rt.copy_to_device(ptr, data)
            return ptr

        def flat(x):
            return [v for a in x for v in (flat(a) if isinstance(a, list) else [a])]

        qp = put(flat(q_bits), "H")
        kvp = put(flat(kv_bits), "H")
        btp = put(flat(table), "i")
        slp = put(lens, "i")
        outp = rt.alloc(batch * sq * n * dl * 2)
        lsep = rt.alloc(batch * sq * n * 4)
        wsp = rt.alloc(ws_size)
        A = mlatune.DeviceArray
        plan.run(A(qp, (batch, sq, n, d), "bfloat16", device=0), A(kvp, (pages, page, d), "bfloat16", device=0),
                 A(btp, (batch, blocks), "int32", device=0), A(slp, (batch,), "int32", device=0),
                 A(outp, (batch, sq, n, dl), "bfloat16", device=0), A(lsep, (batch, sq, n), "float32", device=0),
                 A(wsp, (ws_size,), "uint8", device=0), seq_len_hint=LENGTHS_UNKNOWN)
        rt.synchronize()
        got_out = struct.unpack(f"<{batch * sq * n * dl}H", rt.copy_to_host(outp, batch * sq * n * dl * 2))
        got_lse = struct.unpack(f"<{batch * sq * n}f", rt.copy_to_host(lsep, batch * sq * n * 4))
        q = [[[[bf16_value(v) for v in h] for h in t] for t in b] for b in q_bits]
        keys = [[[bf16_value(v) for v in kv_bits[table[b][j // page]][j % page]] for j in range(lens[b])]
                for b in range(batch)]
        ref_out, ref_lse = reference(q, keys, lens, sq, n, d, dl, scale)
        worst = 0.0
        for b in range(batch):
            for t in range(sq):
                for h in range(n):
                    row = ((b * sq + t) * n + h)
                    want_lse = ref_lse[b][t][h]
                    if want_lse == -math.inf:
                        self.assertEqual(got_lse[row], -math.inf, (b, t, h))
                    else:
                        self.assertAlmostEqual(got_lse[row], want_lse, delta=1e-2 * max(1.0, abs(want_lse)))
                    for i in range(dl):
                        worst = max(worst, abs(bf16_value(got_out[row * dl + i]) - ref_out[b][t][h][i]))
        self.assertLess(worst, 2e-2, "out differs from the reference")
        ws_arg = A(wsp, (ws_size,), "uint8", device=0)
        common = (A(kvp, (pages, page, d), "bfloat16", device=0), A(btp, (batch, blocks), "int32", device=0),
                  A(slp, (batch,), "int32", device=0))
        flat_q = flat(q_bits)
        rows = batch * sq * n

        # the views plan runs contiguous tensors too: the plain plan's bits
        # (the same variant; the views below are compared with this call)
        rt.copy_to_device(outp, bytes(rows * dl * 2))
        vplan.run(A(qp, (batch, sq, n, d), "bfloat16", device=0), *common,
                  A(outp, (batch, sq, n, dl), "bfloat16", device=0), A(lsep, (batch, sq, n), "float32", device=0),
                  ws_arg)
        rt.synchronize()
        v_out = struct.unpack(f"<{rows * dl}H", rt.copy_to_host(outp, rows * dl * 2))
        v_lse = struct.unpack(f"<{rows}f", rt.copy_to_host(lsep, rows * 4))
        if vplan.explain(batch).variant == plan.explain(batch).variant:
            self.assertEqual(v_out, got_out, "the views plan's contiguous call differs from the plain plan's")
            self.assertEqual(struct.pack(f"<{rows}f", *v_lse), struct.pack(f"<{rows}f", *got_lse))
        got_out, got_lse = v_out, v_lse

        # The same call through views (C API 0.2, a views plan): q as (ql_nope, q_pe), each
        # a slice of a wider buffer (ql_nope: columns 0..511 of rows of 640;
        # q_pe: columns 64..127 of token-major rows of 128), out columns
        # 512..1023 of rows of 1024, lse heads first [B, N, Sq], the kv scale
        # (1.0) read from device memory: the same bits, and nothing written
        # outside the views.
        nope_wide = []
        pe_wide = []
        for r in range(rows):
            row = flat_q[r * d:(r + 1) * d]
            nope_wide += row[:dl] + [0x7FC1] * (640 - dl)
            pe_wide += [0x7FC2] * 64 + row[dl:]
        nope_p, pe_p = put(nope_wide, "H"), put(pe_wide, "H")
        sentinel = 0xFFC3  # a bf16 NaN
        out_wide_p = put([sentinel] * (rows * 1024), "H")
        lse_hf_p = put([float("nan")] * rows, "f")
        scale_p = put([1.0], "f")
        ql_nope = A(nope_p, (batch, sq, n, dl), "bfloat16", strides=(sq * n * 640, n * 640, 640, 1), device=0)
        q_pe = A(pe_p + 64 * 2, (batch * sq, n, d - dl), "bfloat16", strides=(n * 128, 128, 1), device=0)
        out_view = A(out_wide_p + dl * 2, (batch * sq, n, dl), "bfloat16", strides=(n * 1024, 1024, 1), device=0)
        vplan.run((ql_nope, q_pe), *common, out_view, A(lse_hf_p, (batch, n, sq), "float32", device=0), ws_arg,
                 kv_scale=A(scale_p, (), "float32", device=0), lse_layout="heads_first")
        rt.synchronize()
        out_wide = struct.unpack(f"<{rows * 1024}H", rt.copy_to_host(out_wide_p, rows * 1024 * 2))
        lse_hf = struct.unpack(f"<{rows}f", rt.copy_to_host(lse_hf_p, rows * 4))
        for r in range(rows):
            self.assertEqual(out_wide[r * 1024 + dl:(r + 1) * 1024], got_out[r * dl:(r + 1) * dl],
                             f"row {r}: out through the views differs from the contiguous call")
            self.assertEqual(set(out_wide[r * 1024:r * 1024 + dl]), {sentinel}, f"row {r}: written outside out")
        for b in range(batch):
            for t in range(sq):
                for h in range(n):
                    self.assertEqual(struct.pack("<f", lse_hf[(b * n + h) * sq + t]),
                                     struct.pack("<f", got_lse[(b * sq + t) * n + h]), (b, t, h))

        # a scale of 0.5 from device memory: keys and values scaled
        rt.copy_to_device(scale_p, struct.pack("<f", 0.5))
        vplan.run(A(qp, (batch, sq, n, d), "bfloat16", device=0), *common,
                 A(outp, (batch, sq, n, dl), "bfloat16", device=0), A(lsep, (batch, sq, n), "float32", device=0),
                 ws_arg, kv_scale=A(scale_p, (1,), "float32", device=0))
        rt.synchronize()
        half_out = struct.unpack(f"<{rows * dl}H", rt.copy_to_host(outp, rows * dl * 2))
        half_lse = struct.unpack(f"<{rows}f", rt.copy_to_host(lsep, rows * 4))
        ref_out, ref_lse = reference(q, [[[0.5 * v for v in key] for key in kb] for kb in keys], lens, sq, n, d, dl,
                                     scale)
        worst = 0.0
        for b in range(batch):
            for t in range(sq):
                for h in range(n):
                    row = (b * sq + t) * n + h
                    if ref_lse[b][t][h] != -math.inf:
                        self.assertAlmostEqual(half_lse[row], ref_lse[b][t][h],
                                               delta=1e-2 * max(1.0, abs(ref_lse[b][t][h])))
                    for i in range(dl):
                        worst = max(worst, abs(bf16_value(half_out[row * dl + i]) - ref_out[b][t][h][i]))
        self.assertLess(worst, 2e-2, "out with the device scale 0.5 differs from the reference")

        # what only C checks comes back with C's message (run_raw checks nothing)
        with self.assertRaises(mlatune.Error) as cm:
            vplan.run_raw(batch, qp, kvp, btp, slp, outp, lsep, wsp, ws_size, blocks,
                         out_strides=(0, 0, dl))
        self.assertEqual(cm.exception.status, Status.ERR_INVALID_ARGUMENT)
        self.assertTrue(cm.exception.message.startswith("mla_decode: out strides (0, 0, 512 per request, token, "
                                                        "head) make rows overlap"), cm.exception.message)

        # the plan without views: the package refuses a view, naming it;
        # past the package (mlt_plan_run called directly) the library does
        with self.assertRaises(mlatune.Error) as cm:
            plan.run((ql_nope, q_pe), *common, out_view, A(lse_hf_p, (batch, n, sq), "float32", device=0), ws_arg,
                     lse_layout="heads_first")
        self.assertTrue(cm.exception.message.startswith('lse_layout: "heads_first" (lse [B, N, Sq]) cannot be '
                                                        'passed to this plan: it was created with views=False'),
                        cm.exception.message)
        packed = _ARGS.pack(batch, LENGTHS_UNKNOWN, blocks, nope_p, kvp, btp, slp, outp, lsep, wsp, ws_size, 0, 0,
                            pe_p, *(0,) * 12, 0)
        self.assertEqual(LIB.mlt_plan_run(plan._handle, packed, 0), Status.ERR_INVALID_ARGUMENT)
        self.assertIn("but its kernels were built for contiguous tensors only: create the plan with views = 1",
                      LIB.last_error())

        # a views value other than 0 / 1 is refused by the library (the
        # package refuses it first: mlt_plan_create called directly)
        c = DecodeProblem(n_heads=n, sq=sq, d=d, dl=dl, page_size=page, q_dtype=0, kv_dtype=0,
                          softmax_scale=scale, kv_scale=1.0, max_batch=batch, views=2)
        handle = ctypes.c_void_p()
        self.assertEqual(LIB.mlt_plan_create(rt._handle, ctypes.byref(c), ctypes.byref(handle)),
                         Status.ERR_INVALID_ARGUMENT)
        self.assertIn("views 2 is neither 0 nor 1", LIB.last_error())
        for p in (qp, kvp, btp, slp, outp, lsep, wsp, nope_p, pe_p, out_wide_p, lse_hf_p, scale_p):
            rt.free(p)
        rt.close()


if __name__ == "__main__":
    unittest.main()
