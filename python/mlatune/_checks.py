"""The argument rules of one plan's decode call, checked before C sees them.

The C runtime checks pointers (null, alignment) and the batch, but it
cannot see dtypes, shapes, devices or strides: a wrong one there is a wrong
result or a fault on the GPU.  These rules catch them with a message naming
the argument ("q: expected dtype bfloat16, got float16").

  argument     dtype            shape (B = seq_lens.shape[0])           align
  q            q_dtype          [B, Sq, N, D] or [B*Sq, N, D]           16
  kv_cache     kv_dtype (*)     [pages, page_size, D] or
                                [pages, page_size, 1, D]                16
  block_table  int32            [>= B, max_blocks_per_seq]              4
  seq_lens     int32            [B], 1 <= B <= max_batch                4
  out          q_dtype          [B, Sq, N, Dl] or [B*Sq, N, Dl]         16
  lse          float32          [B, Sq, N] or [B*Sq, N]                 4
  workspace    any              bytes (the runtime checks the size)     16
  schedule     any              >= plan.schedule_size bytes             16
  (*) fp8 KV may also be given as uint8 / int8 bytes, as vLLM stores it.

Every tensor must be contiguous (row-major) and on the runtime's GPU.

Two implementations of the same rules: torch_pointers() reads torch tensors'
attributes directly (the per-call fast path: one combined test per
argument), pointers() takes anything describe() reads.  When the fast path
finds something wrong it hands the argument to the general check, so both
word their errors the same way.
"""

import sys

from ._capi import DType, Status
from ._errors import Error
from ._tensors import BF16, F16, F32, FP8, I8, I32, U8, describe, device_name

DTYPE_NAMES = {DType.BF16: BF16, DType.FP16: F16, DType.FP8_E4M3: FP8}

_ANY = None  # a dimension that may be anything


def _fmt_shape(shape):
    return "[" + ", ".join("*" if s is None else str(s) for s in shape) + "]"


def _shape_matches(shape, pattern):
    return len(shape) == len(pattern) and all(p is None or p == s for s, p in zip(shape, pattern))


class _BatchShapes:
    """The expected shapes for one batch size (cached per plan)."""
    __slots__ = ("q", "out", "lse", "q_pair")

    def __init__(self, batch, sq, n, d, dl):
        t = batch * sq
        self.q = ((batch, sq, n, d), (t, n, d))
        self.out = ((batch, sq, n, dl), (t, n, dl))
        self.lse = ((batch, sq, n), (t, n))
        # the split form: (ql_nope [.., N, Dl], q_pe [.., N, D - Dl])
        self.q_pair = (((batch, sq, n, dl), (t, n, dl)), ((batch, sq, n, d - dl), (t, n, d - dl)))


class CallRules:
    """The rules for one plan: its problem's sizes and dtypes, the device,
    max_batch and the schedule size."""

    def __init__(self, problem, device, schedule_size):
        self.n_heads, self.sq, self.d, self.dl = problem.n_heads, problem.sq, problem.d, problem.dl
        self.page_size = problem.page_size
        self.max_batch = problem.max_batch
        self.device = device
        self.schedule_size = schedule_size
        self.q_dtype = DTYPE_NAMES[DType(problem.q_dtype)]
        kv = DTYPE_NAMES[DType(problem.kv_dtype)]
        self.kv_dtypes = (kv, U8, I8) if kv == FP8 else (kv,)
        self.kv_shapes = ((_ANY, self.page_size, self.d), (_ANY, self.page_size, 1, self.d))
        self._batch_shapes = {}
        self._torch = None  # torch dtypes, built on the first torch call

    def shapes(self, batch):
        s = self._batch_shapes.get(batch)
        if s is None:
            s = self._batch_shapes[batch] = _BatchShapes(batch, self.sq, self.n_heads, self.d, self.dl)
        return s

    # ------------------------------------------------------------------
    # general path

    def check(self, obj, name, dtypes, shapes, align, min_bytes=0):
        """Checks one argument against (dtypes or None for any, shape
        patterns or None for any, alignment); returns its TensorView."""
        v = describe(obj, name)
        if dtypes is not None and v.dtype not in dtypes:
            raise Error(Status.ERR_INVALID_ARGUMENT, f"{name}: expected dtype {' or '.join(dtypes)}, got {v.dtype}")
        if v.device == "cpu" or (v.device is not None and v.device != self.device):
            raise Error(Status.ERR_INVALID_ARGUMENT,
                        f"{name}: on {device_name(v.device)}, expected {device_name(self.device)} "
                        f"(the runtime's device)")
        if shapes is not None and not any(_shape_matches(v.shape, p) for p in shapes):
            raise Error(Status.ERR_INVALID_ARGUMENT,
                        f"{name}: expected shape {' or '.join(_fmt_shape(p) for p in shapes)}, got {list(v.shape)}")
        if v.strides is not None:
            raise Error(Status.ERR_INVALID_ARGUMENT,
                        f"{name}: not contiguous (shape {list(v.shape)}, strides {list(v.strides)} elements): "
                        f"the C API takes dense row-major tensors")
        if v.ptr % align:
            raise Error(Status.ERR_INVALID_ARGUMENT,
                        f"{name}: data pointer 0x{v.ptr:x} is not {align}-byte aligned (the kernels move "
                        f"{'rows in 16-byte pieces' if align == 16 else '4-byte words'})")
        if v.nbytes < min_bytes:
            raise Error(Status.ERR_INVALID_ARGUMENT, f"{name}: {v.nbytes} bytes, the plan needs {min_bytes}")
        return v

    def batch_of(self, seq_lens):
        v = self.check(seq_lens, "seq_lens", (I32,), None, 4)
        if len(v.shape) != 1 or not 1 <= v.shape[0] <= self.max_batch:
            raise Error(Status.ERR_INVALID_ARGUMENT,
                        f"seq_lens: expected shape [batch] with 1 <= batch <= {self.max_batch} "
                        f"(the plan's max_batch), got {list(v.shape)}")
        return v.shape[0], v.ptr

    def block_table(self, block_table, batch):
        v = self.check(block_table, "block_table", (I32,), None, 4)
        if len(v.shape) != 2 or v.shape[0] < batch or v.shape[1] < 1:
            raise Error(Status.ERR_INVALID_ARGUMENT,
                        f"block_table: expected shape [>= {batch}, max_blocks_per_seq >= 1] "
                        f"(batch {batch} from seq_lens), got {list(v.shape)}")
        return v.ptr, v.shape[1]

    def pointers(self, q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule):
        """All arguments, any kind of tensor: (batch, max_blocks, q, kv,
        block_table, seq_lens, out, lse, workspace, workspace_bytes,
        schedule) as integers."""
        batch, sl = self.batch_of(seq_lens)
        bt, max_blocks = self.block_table(block_table, batch)
        s = self.shapes(batch)
        qp = self.check(q, "q", (self.q_dtype,), s.q, 16).ptr
        kv = self.check(kv_cache, "kv_cache", self.kv_dtypes, self.kv_shapes, 16).ptr
        op = self.check(out, "out", (self.q_dtype,), s.out, 16).ptr
        lp = self.check(lse, "lse", (F32,), s.lse, 4).ptr
        ws = wsb = sc = 0
        if workspace is not None:
            v = self.check(workspace, "workspace", None, None, 16)
            ws, wsb = v.ptr, v.nbytes
        if schedule is not None:
            sc = self.check(schedule, "schedule", None, None, 16, self.schedule_size).ptr
        return batch, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb, sc

    def q_pair(self, ql_nope, q_pe, batch):
        """The split form's two parts (pointers), for a library that takes
        them.  Each part is checked like q; strides are the C API's
        addition that goes with it (a view into a larger buffer)."""
        nope_shapes, pe_shapes = self.shapes(batch).q_pair
        a = self.check(ql_nope, "q[0] (ql_nope)", (self.q_dtype,), nope_shapes, 16)
        b = self.check(q_pe, "q[1] (q_pe)", (self.q_dtype,), pe_shapes, 16)
        return a.ptr, b.ptr

    # ------------------------------------------------------------------
    # torch fast path

    def _torch_dtypes(self):
        torch = sys.modules["torch"]
        def dt(name):
            return getattr(torch, name, None)
        self._torch = (dt(self.q_dtype), tuple(x for x in map(dt, self.kv_dtypes) if x is not None),
                       torch.int32, torch.float32)
        return self._torch

    def torch_pointers(self, q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule):
        """pointers() for torch tensors, reading each tensor's attributes
        once in a single test; anything off goes to the general check,
        which raises with the precise message."""
        q_dt, kv_dts, i32, f32 = self._torch or self._torch_dtypes()
        dev = self.device

        sls = seq_lens.shape
        if (seq_lens.dtype is not i32 or len(sls) != 1 or not 1 <= sls[0] <= self.max_batch
                or seq_lens.get_device() != dev or not seq_lens.is_contiguous()):
            self.batch_of(seq_lens)
        batch = sls[0]
        sl = seq_lens.data_ptr()

        bts = block_table.shape
        if (block_table.dtype is not i32 or len(bts) != 2 or bts[0] < batch or bts[1] < 1
                or block_table.get_device() != dev or not block_table.is_contiguous()):
            self.block_table(block_table, batch)
        bt = block_table.data_ptr()

        s = self.shapes(batch)
        if q.dtype is not q_dt or q.shape not in s.q or q.get_device() != dev or not q.is_contiguous():
            self.check(q, "q", (self.q_dtype,), s.q, 16)
        qp = q.data_ptr()

        kvs = kv_cache.shape
        if (kv_cache.dtype not in kv_dts or len(kvs) not in (3, 4) or kvs[1] != self.page_size
                or kvs[-1] != self.d or (len(kvs) == 4 and kvs[2] != 1)
                or kv_cache.get_device() != dev or not kv_cache.is_contiguous()):
            self.check(kv_cache, "kv_cache", self.kv_dtypes, self.kv_shapes, 16)
        kv = kv_cache.data_ptr()

        if out.dtype is not q_dt or out.shape not in s.out or out.get_device() != dev or not out.is_contiguous():
            self.check(out, "out", (self.q_dtype,), s.out, 16)
        op = out.data_ptr()

        if lse.dtype is not f32 or lse.shape not in s.lse or lse.get_device() != dev or not lse.is_contiguous():
            self.check(lse, "lse", (F32,), s.lse, 4)
        lp = lse.data_ptr()

        # bt, sl, lp: 4-byte types whose pointers are 4-aligned unless the
        # tensor is a view at an odd byte offset: one test for all
        if (qp | kv | op) & 15 or (bt | sl | lp) & 3:
            self.pointers(q, kv_cache, block_table, seq_lens, out, lse, None, None)

        ws = wsb = sc = 0
        if workspace is not None:
            if workspace.get_device() != dev or not workspace.is_contiguous():
                self.check(workspace, "workspace", None, None, 16)
            ws = workspace.data_ptr()
            wsb = workspace.numel() * workspace.element_size()
            if ws & 15:
                self.check(workspace, "workspace", None, None, 16)
        if schedule is not None:
            sc = schedule.data_ptr()
            if (schedule.get_device() != dev or not schedule.is_contiguous() or sc & 15
                    or schedule.numel() * schedule.element_size() < self.schedule_size):
                self.check(schedule, "schedule", None, None, 16, self.schedule_size)
        return batch, bts[1], qp, kv, bt, sl, op, lp, ws, wsb, sc
