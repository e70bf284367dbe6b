"""The argument rules of one plan's decode call, checked before C sees them.

The C runtime checks pointers (null, alignment), the batch and the views'
strides, but it cannot see dtypes, shapes or devices: a wrong one there is
a wrong result or a fault on the GPU.  These rules catch them with a
message naming the argument ("q: expected dtype bfloat16, got float16").

  argument     dtype            shape (B = seq_lens.shape[0])           align
  q            q_dtype          [B, Sq, N, D] or [B*Sq, N, D]           16
    or the pair (ql_nope, q_pe):
    q[0]       q_dtype          [B, Sq, N, Dl] or [B*Sq, N, Dl]         16
    q[1]       q_dtype          [B, Sq, N, D-Dl] or [B*Sq, N, D-Dl]     16
  kv_cache     kv_dtype (*)     [pages, page_size, D] or
                                [pages, page_size, 1, D]                16
  block_table  int32            [>= B, max_blocks_per_seq]              4
  seq_lens     int32            [B], 1 <= B <= max_batch                4
  out          q_dtype          [B, Sq, N, Dl] or [B*Sq, N, Dl]         16
  lse          float32          [B, Sq, N] or [B*Sq, N];
                                [B, N, Sq] with lse_layout="heads_first" 4
  workspace    any              bytes (the runtime checks the size)     16
  schedule     any              >= plan.schedule_size bytes             16
  kv_scale     float32          one element (0-d or [1]), or None       4
  (*) fp8 KV may also be given as uint8 / int8 bytes, as vLLM stores it.

Every tensor must be on the runtime's GPU.  q (or its parts), out and lse
may be strided views (C API 0.2: their strides per request, token and head
go into mlt_decode_args) under the C side's rules, checked here first:
each row's elements adjacent (last stride 1), no negative stride, q / q_pe /
out strides multiples of 8 elements (rows move in 16-byte pieces), out and
lse rows not overlapping.  The other tensors must be contiguous.  A view
(the pair, a strided q / q_pe / out / lse, lse_layout="heads_first", a
kv_scale tensor) needs a plan created with views=True (mlt_decode_problem's
views: kernels that place rows through strides, a little slower); a plan
created with views=False refuses it here, naming the argument, as C would.

Two implementations of the same rules: torch_pointers() reads torch tensors'
attributes directly (the per-call fast path: one combined test per
argument), pointers() takes anything describe() reads.  When the fast path
finds something wrong it hands the argument to the general check, so both
word their errors the same way.
"""

import sys

from ._capi import VIEWS_VERSION, DType, Status
from ._errors import Error, Unsupported
from ._tensors import BF16, F16, F32, FP8, FP8_FNUZ, I8, I32, U8, contiguous_strides, describe, device_name, numel

DTYPE_NAMES = {DType.BF16: BF16, DType.FP16: F16, DType.FP8_E4M3: FP8, DType.FP8_E4M3_FNUZ: FP8_FNUZ}

_ANY = None  # a dimension that may be anything

# mlt_decode_args' view strides for a contiguous tensor (all three 0), and
# the whole tail of the struct (q_pe, the four stride triples,
# kv_scale_device) when every tensor is contiguous, q is one tensor and the
# scale is the plan's
ZERO3 = (0, 0, 0)
NO_VIEWS = (0,) * 14
_DIMS = ("request", "token", "head")


def lse_heads_first(layout):
    """lse_layout -> whether lse is [B, N, Sq] (FlashMLA's) rather than
    [B, Sq, N] / [B*Sq, N]."""
    if layout is None or layout == "tokens_first":
        return False
    if layout == "heads_first":
        return True
    raise Error(Status.ERR_INVALID_ARGUMENT,
                f"lse_layout: expected \"tokens_first\" (lse [B, Sq, N] or [B*Sq, N], the default) or "
                f"\"heads_first\" (lse [B, N, Sq]), got {layout!r}")


def _fmt_shape(shape):
    return "[" + ", ".join("*" if s is None else str(s) for s in shape) + "]"


def _shape_matches(shape, pattern):
    return len(shape) == len(pattern) and all(p is None or p == s for s, p in zip(shape, pattern))


def _bad(message):
    return Error(Status.ERR_INVALID_ARGUMENT, message)


class _Rows:
    """One tensor of rows (q, a part of q, out, lse) and how its layout
    becomes the C API's strides per (request, token, head)."""
    __slots__ = ("name", "dtype", "width", "piece", "written", "sq", "contiguous", "_seen")

    def __init__(self, name, dtype, width, piece, written, sq, n_heads):
        self.name = name
        self.dtype = dtype
        self.width = width          # elements of one row (1 for lse: no row dimension)
        self.piece = piece          # strides must be multiples of this (8: 16-byte pieces of 16-bit data)
        self.written = written      # out, lse: rows may not overlap
        self.sq = sq
        self.contiguous = (sq * n_heads * width, n_heads * width, width)
        self._seen = {}  # (shape, strides, heads_first) -> the answer: an engine repeats a few layouts

    def strides(self, shape, strides, heads_first=False):
        """_strides(), remembered for the layouts seen last (a dict lookup
        instead of about 1.5 us of arithmetic per view and call)."""
        key = (shape, strides, heads_first)
        st = self._seen.get(key)
        if st is None:
            st = self._strides(shape, strides, heads_first)  # raises for a layout C would refuse
            if len(self._seen) >= 64:
                self._seen.clear()
            self._seen[key] = st
        return st

    def _strides(self, shape, strides, heads_first=False):
        """The (request, token, head) strides in elements of a tensor whose
        shape matched one of its forms ([B, Sq, N(, W)], [B*Sq, N(, W)], or
        lse's [B, N, Sq] when heads_first), given its strides in elements;
        ZERO3 when the rows lie as in the contiguous layout.  Raises Error
        naming the tensor for what the C API would refuse."""
        name = self.name
        lead, lead_strides = shape, strides
        if self.width > 1:
            if strides[-1] != 1 and shape[-1] > 1:
                raise _bad(f"{name}: the last dimension has stride {strides[-1]} (shape {list(shape)}, strides "
                           f"{list(strides)} elements): each row's {self.width} elements must be adjacent")
            lead, lead_strides = shape[:-1], strides[:-1]
        if len(lead) == 3:
            if heads_first:  # [B, N, Sq]
                extents = (lead[0], lead[2], lead[1])
                given = (lead_strides[0], lead_strides[2], lead_strides[1])
            else:
                extents, given = lead, lead_strides
        else:  # [B*Sq, N]: token i = b * Sq + t
            extents = (lead[0] // self.sq, self.sq, lead[1])
            given = (self.sq * lead_strides[0], lead_strides[0], lead_strides[1])
        # a dimension of one index never moves a pointer, whatever its
        # stride: it gets the contiguous layout's (the C side would check
        # it all the same)
        c = self.contiguous
        st = (c[0] if extents[0] == 1 else given[0], c[1] if extents[1] == 1 else given[1],
              c[2] if extents[2] == 1 else given[2])
        if st == c:
            return ZERO3
        for dim, s in zip(_DIMS, st):
            if s < 0:
                raise _bad(f"{name}: stride per {dim} is {s} elements (shape {list(shape)}, strides "
                           f"{list(strides)}): negative strides are not supported")
            if s % self.piece:
                raise _bad(f"{name}: stride per {dim} is {s} elements (shape {list(shape)}, strides "
                           f"{list(strides)}), not a multiple of {self.piece} (rows are moved in 16-byte pieces)")
        if self.written:
            # as the C side checks it: the dimensions of more than one index,
            # by stride, each starting past the end of those inside it
            dims = sorted((s, e) for s, e in zip(st, extents) if e > 1)
            end = self.width
            for s, e in dims:
                if s < end:
                    raise _bad(f"{name}: strides {list(strides)} (shape {list(shape)}) make rows overlap: a "
                               f"stride of {s} elements where {end} are needed (every row is written)")
                end = s * (e - 1) + end
        elif st == ZERO3:
            raise _bad(f"{name}: strides {list(strides)} (shape {list(shape)}): every row at one address (a "
                       f"broadcast view) cannot be passed: the C API reads all-zero strides as the contiguous "
                       f"layout; pass a contiguous copy")
        return st


class _BatchShapes:
    """The expected shapes for one batch size (cached per plan)."""
    __slots__ = ("q", "out", "lse", "lse_heads_first", "q_nope", "q_pe")

    def __init__(self, batch, sq, n, d, dl):
        t = batch * sq
        self.q = ((batch, sq, n, d), (t, n, d))
        self.out = ((batch, sq, n, dl), (t, n, dl))
        self.lse = ((batch, sq, n), (t, n))
        self.lse_heads_first = ((batch, n, sq),)
        # the split form: (ql_nope [.., N, Dl], q_pe [.., N, D - Dl])
        self.q_nope = ((batch, sq, n, dl), (t, n, dl))
        self.q_pe = ((batch, sq, n, d - dl), (t, n, d - dl))


class CallRules:
    """The rules for one plan: its problem's sizes and dtypes, the device,
    max_batch, the schedule size, and whether views may be passed: the
    library's C API takes them (API >= 0.2) and the plan was created with
    views=True.  self.views is both (the fast tests read it once)."""

    def __init__(self, problem, device, schedule_size, library=None):
        self.n_heads, self.sq, self.d, self.dl = problem.n_heads, problem.sq, problem.d, problem.dl
        self.page_size = problem.page_size
        self.max_batch = problem.max_batch
        self.device = device
        self.schedule_size = schedule_size
        self.library = library
        self.library_views = library is None or library.supports_views
        self.plan_views = bool(getattr(problem, "views", False))
        self.views = self.library_views and self.plan_views
        self.q_dtype = DTYPE_NAMES[DType(problem.q_dtype)]
        kv = DTYPE_NAMES[DType(problem.kv_dtype)]
        self.kv_dtypes = (kv, U8, I8) if kv in (FP8, FP8_FNUZ) else (kv,)
        self.kv_shapes = ((_ANY, self.page_size, self.d), (_ANY, self.page_size, 1, self.d))
        sq, n = self.sq, self.n_heads
        qd = self.q_dtype
        self.q_rows = _Rows("q", qd, self.d, 8, False, sq, n)
        self.nope_rows = _Rows("q[0] (ql_nope)", qd, self.dl, 8, False, sq, n)
        self.pe_rows = _Rows("q[1] (q_pe)", qd, self.d - self.dl, 8, False, sq, n)
        self.out_rows = _Rows("out", qd, self.dl, 8, True, sq, n)
        self.lse_rows = _Rows("lse", F32, 1, 1, True, sq, n)
        self._batch_shapes = {}
        self._torch = None  # torch dtypes, built on the first torch call

    def shapes(self, batch):
        s = self._batch_shapes.get(batch)
        if s is None:
            s = self._batch_shapes[batch] = _BatchShapes(batch, self.sq, self.n_heads, self.d, self.dl)
        return s

    # ------------------------------------------------------------------
    # what an older library cannot take

    def _too_old(self, subject, advice=""):
        """Unsupported: `subject` needs the views of C API 0.2."""
        lib = self.library
        return Unsupported(f"{subject} needs libmlatune C API >= {VIEWS_VERSION[0]}.{VIEWS_VERSION[1]}; {lib.path} "
                           f"has API {lib.version[0]}.{lib.version[1]}" + (f": {advice}" if advice else ""))

    def no_views(self, subject, advice=""):
        """Error: `subject` is a view and the plan was created with
        views=False."""
        return _bad(f"{subject} cannot be passed to this plan: it was created with views=False (its kernels were "
                    f"built for contiguous tensors only); create the plan with views=True "
                    f"(Runtime.plan(..., views=True))" + (f", or {advice}" if advice else ""))

    def _refuse(self, subject, advice=""):
        """Why `subject`, a view, cannot be passed: the library (Unsupported)
        or the plan (Error)."""
        if not self.library_views:
            return self._too_old(subject, advice)
        return self.no_views(subject, advice)

    def _strided(self, rows, shape, strides, heads_first=False):
        """rows.strides(), refused on a library without views or a plan
        created without them when the layout is not the contiguous one."""
        st = rows.strides(shape, strides, heads_first)
        if st is not ZERO3 and not self.views:
            raise self._refuse(f"{rows.name}: a strided view (shape {list(shape)}, strides {list(strides)} "
                               f"elements)", "pass a contiguous tensor")
        return st

    def heads_first(self, layout):
        """lse_heads_first(layout), refused on a plan created without views
        for "heads_first" (lse [B, N, Sq] is read through strides)."""
        heads_first = lse_heads_first(layout)
        if heads_first and not self.plan_views:
            raise self.no_views('lse_layout: "heads_first" (lse [B, N, Sq])',
                                'pass lse as [B, Sq, N] (lse_layout "tokens_first", the default)')
        return heads_first

    def pair(self, q):
        """q given as a sequence: (ql_nope, q_pe), checked for its length,
        the plan's D and Dl and the library."""
        if len(q) != 2:
            raise _bad(f"q: expected one tensor or a pair (ql_nope, q_pe), got a sequence of {len(q)}")
        if not self.library_views:
            raise self._too_old("q: the split form (ql_nope, q_pe), two pointers in mlt_decode_args,",
                                f"pass q as one [B, Sq, N, {self.d}] tensor (the package does not concatenate, "
                                f"which would allocate per call)")
        if not self.plan_views:
            raise self.no_views("q: the pair (ql_nope, q_pe)", f"pass q as one [B, Sq, N, {self.d}] tensor")
        if self.d <= self.dl or self.dl % 8:
            raise _bad(f"q: the split form (ql_nope, q_pe) needs D > Dl and Dl a multiple of 8 (the plan has "
                       f"D={self.d}, Dl={self.dl})")
        if q[1] is None:
            raise _bad("q[1] (q_pe): missing (None)")
        return q[0], q[1]

    # ------------------------------------------------------------------
    # general path

    def check(self, obj, name, dtypes, shapes, align, min_bytes=0, strided=False):
        """Checks one argument against (dtypes or None for any, shape
        patterns or None for any, alignment); returns its TensorView.  A
        view with strides is refused unless `strided` (the caller then
        checks them)."""
        return self._check_view(describe(obj, name), name, dtypes, shapes, align, min_bytes, strided)

    def _check_view(self, v, name, dtypes, shapes, align, min_bytes=0, strided=False):
        if dtypes is not None and v.dtype not in dtypes:
            raise _bad(f"{name}: expected dtype {' or '.join(dtypes)}, got {v.dtype}")
        if v.device == "cpu" or (v.device is not None and v.device != self.device):
            raise _bad(f"{name}: on {device_name(v.device)}, expected {device_name(self.device)} "
                       f"(the runtime's device)")
        if shapes is not None and not any(_shape_matches(v.shape, p) for p in shapes):
            raise _bad(f"{name}: expected shape {' or '.join(_fmt_shape(p) for p in shapes)}, got {list(v.shape)}")
        if v.strides is not None and not strided:
            raise _bad(f"{name}: not contiguous (shape {list(v.shape)}, strides {list(v.strides)} elements): "
                       f"the C API takes it dense and row-major (only q, out and lse may be strided views)")
        if v.ptr % align:
            raise _bad(f"{name}: data pointer 0x{v.ptr:x} is not {align}-byte aligned (the kernels move "
                       f"{'rows in 16-byte pieces' if align == 16 else '4-byte words'})")
        if v.nbytes < min_bytes:
            raise _bad(f"{name}: {v.nbytes} bytes, the plan needs {min_bytes}")
        return v

    def rows(self, obj, rows, shapes, align, heads_first=False):
        """A tensor of rows (q, a part of q, out, lse), any kind: (pointer,
        (request, token, head) strides or ZERO3)."""
        name = rows.name
        v = describe(obj, name)
        if v.strides is None and not heads_first:
            return self._check_view(v, name, (rows.dtype,), shapes, align).ptr, ZERO3
        # the strides are checked before the alignment, as contiguity was
        self._check_view(v, name, (rows.dtype,), shapes, 1, strided=True)
        strides = v.strides if v.strides is not None else contiguous_strides(v.shape)
        st = self._strided(rows, v.shape, strides, heads_first)
        self._check_view(v, name, None, None, align, strided=True)
        return v.ptr, st

    def batch_of(self, seq_lens):
        v = self.check(seq_lens, "seq_lens", (I32,), None, 4)
        if len(v.shape) != 1 or not 1 <= v.shape[0] <= self.max_batch:
            raise _bad(f"seq_lens: expected shape [batch] with 1 <= batch <= {self.max_batch} "
                       f"(the plan's max_batch), got {list(v.shape)}")
        return v.shape[0], v.ptr

    def block_table(self, block_table, batch):
        v = self.check(block_table, "block_table", (I32,), None, 4)
        if len(v.shape) != 2 or v.shape[0] < batch or v.shape[1] < 1:
            raise _bad(f"block_table: expected shape [>= {batch}, max_blocks_per_seq >= 1] "
                       f"(batch {batch} from seq_lens), got {list(v.shape)}")
        return v.ptr, v.shape[1]

    def kv_scale(self, obj):
        """The device pointer of a kv scale tensor (one float32)."""
        if isinstance(obj, (int, float)):
            raise _bad(f"kv_scale: expected a device tensor holding one float32 (vLLM's layer._k_scale), got "
                       f"{type(obj).__name__} {obj!r}: a fixed scale is the plan's (Runtime.plan(kv_scale=...))")
        v = self.check(obj, "kv_scale", (F32,), None, 4)
        if numel(v.shape) != 1:
            raise _bad(f"kv_scale: expected one element (shape [] or [1]), got shape {list(v.shape)}")
        if not self.views:
            raise self._refuse("kv_scale: a scale read from device memory (a tensor)",
                               "give the plan its scale (Runtime.plan(kv_scale=...))")
        return v.ptr

    def pointers(self, q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule, kv_scale=None,
                 heads_first=False, q_pe=None):
        """All arguments, any kind of tensor (q_pe: None, or the second part
        of q, q then being the first): (batch, max_blocks, q, kv,
        block_table, seq_lens, out, lse, workspace, workspace_bytes,
        schedule, views) as integers, views being the 14 values of
        mlt_decode_args' tail (NO_VIEWS when there are none)."""
        batch, sl = self.batch_of(seq_lens)
        bt, max_blocks = self.block_table(block_table, batch)
        s = self.shapes(batch)
        if q_pe is None:
            qp, qs = self.rows(q, self.q_rows, s.q, 16)
            pp, ps = 0, ZERO3
        else:
            qp, qs = self.rows(q, self.nope_rows, s.q_nope, 16)
            pp, ps = self.rows(q_pe, self.pe_rows, s.q_pe, 16)
        kv = self.check(kv_cache, "kv_cache", self.kv_dtypes, self.kv_shapes, 16).ptr
        op, os_ = self.rows(out, self.out_rows, s.out, 16)
        lp, ls = self.rows(lse, self.lse_rows, s.lse_heads_first if heads_first else s.lse, 4, heads_first)
        ws = wsb = sc = 0
        if workspace is not None:
            v = self.check(workspace, "workspace", None, None, 16)
            ws, wsb = v.ptr, v.nbytes
        if schedule is not None:
            sc = self.check(schedule, "schedule", None, None, 16, self.schedule_size).ptr
        ks = 0 if kv_scale is None else self.kv_scale(kv_scale)
        if pp or ks or qs is not ZERO3 or os_ is not ZERO3 or ls is not ZERO3:
            views = (pp,) + qs + ps + os_ + ls + (ks,)
        else:
            views = NO_VIEWS
        return batch, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb, sc, views

    # ------------------------------------------------------------------
    # torch fast path

    def _torch_dtypes(self):
        torch = sys.modules["torch"]
        def dt(name):
            return getattr(torch, name, None)
        self._torch = (dt(self.q_dtype), tuple(x for x in map(dt, self.kv_dtypes) if x is not None),
                       torch.int32, torch.float32)
        return self._torch

    def _torch_rows(self, t, rows, dt, shapes, align, heads_first=False):
        """rows() for a torch tensor: the fast test, then the strides only
        when it is not contiguous; anything off goes to rows()."""
        p = t.data_ptr()
        if t.dtype is not dt or t.shape not in shapes or t.get_device() != self.device or p % align:
            return self.rows(t, rows, shapes, align, heads_first)
        if heads_first or not t.is_contiguous():
            return p, self._strided(rows, t.shape, t.stride(), heads_first)
        return p, ZERO3

    def torch_pointers(self, q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule):
        """pointers() for torch tensors, q one tensor, every view contiguous
        and the plan's kv scale: reads each tensor's attributes once in a
        single test.  Returns None when a view is not contiguous (the caller
        then takes torch_views()); anything wrong goes to the general check,
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
        if q.dtype is not q_dt or q.shape not in s.q or q.get_device() != dev:
            self.check(q, "q", (self.q_dtype,), s.q, 16, strided=True)
        if not q.is_contiguous():
            return None
        qp = q.data_ptr()

        kvs = kv_cache.shape
        if (kv_cache.dtype not in kv_dts or len(kvs) not in (3, 4) or kvs[1] != self.page_size
                or kvs[-1] != self.d or (len(kvs) == 4 and kvs[2] != 1)
                or kv_cache.get_device() != dev or not kv_cache.is_contiguous()):
            self.check(kv_cache, "kv_cache", self.kv_dtypes, self.kv_shapes, 16)
        kv = kv_cache.data_ptr()

        if out.dtype is not q_dt or out.shape not in s.out or out.get_device() != dev:
            self.check(out, "out", (self.q_dtype,), s.out, 16, strided=True)
        if not out.is_contiguous():
            return None
        op = out.data_ptr()

        if lse.dtype is not f32 or lse.shape not in s.lse or lse.get_device() != dev:
            self.check(lse, "lse", (F32,), s.lse, 4, strided=True)
        if not lse.is_contiguous():
            return None
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
        return batch, bts[1], qp, kv, bt, sl, op, lp, ws, wsb, sc, NO_VIEWS

    def torch_views(self, q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule, kv_scale=None,
                    heads_first=False, q_pe=None):
        """pointers() for torch tensors in any form: q one tensor or its two
        parts (q_pe not None), strided views, lse heads first, a kv scale
        tensor.  Each tensor is read once; anything wrong goes to the
        general check."""
        q_dt, kv_dts, i32, f32 = self._torch or self._torch_dtypes()
        dev = self.device

        sls = seq_lens.shape
        if (seq_lens.dtype is not i32 or len(sls) != 1 or not 1 <= sls[0] <= self.max_batch
                or seq_lens.get_device() != dev or not seq_lens.is_contiguous() or seq_lens.data_ptr() & 3):
            self.batch_of(seq_lens)
        batch = sls[0]
        sl = seq_lens.data_ptr()

        bts = block_table.shape
        if (block_table.dtype is not i32 or len(bts) != 2 or bts[0] < batch or bts[1] < 1
                or block_table.get_device() != dev or not block_table.is_contiguous() or block_table.data_ptr() & 3):
            self.block_table(block_table, batch)
        bt = block_table.data_ptr()

        s = self.shapes(batch)
        if q_pe is None:
            qp, qs = self._torch_rows(q, self.q_rows, q_dt, s.q, 16)
            pp, ps = 0, ZERO3
        else:
            qp, qs = self._torch_rows(q, self.nope_rows, q_dt, s.q_nope, 16)
            pp, ps = self._torch_rows(q_pe, self.pe_rows, q_dt, s.q_pe, 16)

        kvs = kv_cache.shape
        if (kv_cache.dtype not in kv_dts or len(kvs) not in (3, 4) or kvs[1] != self.page_size
                or kvs[-1] != self.d or (len(kvs) == 4 and kvs[2] != 1)
                or kv_cache.get_device() != dev or not kv_cache.is_contiguous() or kv_cache.data_ptr() & 15):
            self.check(kv_cache, "kv_cache", self.kv_dtypes, self.kv_shapes, 16)
        kv = kv_cache.data_ptr()

        op, os_ = self._torch_rows(out, self.out_rows, q_dt, s.out, 16)
        lp, ls = self._torch_rows(lse, self.lse_rows, f32, s.lse_heads_first if heads_first else s.lse, 4,
                                  heads_first)

        ws = wsb = sc = ks = 0
        if workspace is not None:
            ws = workspace.data_ptr()
            if workspace.get_device() != dev or not workspace.is_contiguous() or ws & 15:
                self.check(workspace, "workspace", None, None, 16)
            wsb = workspace.numel() * workspace.element_size()
        if schedule is not None:
            sc = schedule.data_ptr()
            if (schedule.get_device() != dev or not schedule.is_contiguous() or sc & 15
                    or schedule.numel() * schedule.element_size() < self.schedule_size):
                self.check(schedule, "schedule", None, None, 16, self.schedule_size)
        if kv_scale is not None:
            if (type(kv_scale) is not type(seq_lens) or kv_scale.dtype is not f32 or kv_scale.numel() != 1
                    or kv_scale.get_device() != dev or kv_scale.data_ptr() & 3 or not self.views):
                ks = self.kv_scale(kv_scale)
            else:
                ks = kv_scale.data_ptr()
        if pp or ks or qs is not ZERO3 or os_ is not ZERO3 or ls is not ZERO3:
            views = (pp,) + qs + ps + os_ + ls + (ks,)
        else:
            views = NO_VIEWS
        return batch, bts[1], qp, kv, bt, sl, op, lp, ws, wsb, sc, views
