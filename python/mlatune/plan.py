"""Plan: one MLA decode problem, ready to run (mlt_plan_*).

Per call, run() checks the tensors (_checks.py), packs mlt_decode_args and
calls mlt_plan_run; run_raw() skips the checks and takes integers.  A call
whose tensors have the layouts of the plan's last checked call (shapes,
dtypes, devices, strides: _layouts.py) takes that call's answer and reads
only the pointers, whose alignment it tests.

Why the arguments are packed into a new bytes object per call rather than
stored into one ctypes struct kept by the plan: a plan may be run from
several threads at once (mlatune.h), and a shared struct could be refilled
by another thread between the store and the call; a bytes object is private
to its call.  It is also the cheaper of the two: one struct.pack of the
fields (about 0.2 us for the 13 of a call without views, the views' tail
being pad bytes, zeros; a call of remembered views packs 14 and appends
the strides packed when its layouts were checked) against one ctypes
attribute store per field (about 0.06 us each, 19 fields).  The layout
comes from the ctypes mirror (_capi.struct_packer), which
tests/test_layout.py compares with the header.
No device memory is allocated and nothing synchronises.
"""

import ctypes
import struct
import sys
from dataclasses import dataclass

from ._capi import LENGTHS_UNKNOWN, ChoiceInfo, ChoiceReason, DecodeArgs, DType, Status, struct_packer
from ._checks import NO_VIEWS, ZERO3, CallRules
from ._errors import Error
from ._layouts import remember, tensor_guards
from ._streams import TorchStreams, stream_handle

_FIELDS = [f for f, _ in DecodeArgs._fields_]
_ARGS = struct_packer(DecodeArgs)
# a call with no view packs 13 values instead of 27: the fields up to
# `schedule` (C API 0.1's), the views' tail left as zeros by pad bytes
_PLAIN = struct.Struct(struct_packer(DecodeArgs, _FIELDS.index("schedule") + 1).format
                       + f"{_ARGS.size - DecodeArgs.q_pe.offset}x")
# a call of remembered layouts with views: the fields up to q_pe, the 12
# view strides (the same for the same layouts: packed once, by _remember),
# then kv_scale_device and whatever pads the struct
_HEAD_PE = struct_packer(DecodeArgs, _FIELDS.index("q_pe") + 1)
_STRIDES = struct.Struct("=12q")
_KV_SCALE = struct.Struct("=" + ("Q" if ctypes.sizeof(ctypes.c_void_p) == 8 else "I")
                          + f"{_ARGS.size - DecodeArgs.kv_scale_device.offset - ctypes.sizeof(ctypes.c_void_p)}x")
if (_HEAD_PE.size != DecodeArgs.q_strides.offset
        or DecodeArgs.q_strides.offset + _STRIDES.size != DecodeArgs.kv_scale_device.offset
        or _HEAD_PE.size + _STRIDES.size + _KV_SCALE.size != _ARGS.size):
    raise AssertionError("mlt_decode_args: the view strides are not 12 adjacent int64 before kv_scale_device")

_PAIR_TYPES = (tuple, list)  # q given as (ql_nope, q_pe)
_UNSET = object()

# a call's form: (q is the pair, no workspace, no schedule, no kv_scale,
# lse_layout).  The forms engines use, named (run() spells them out):
_WS = (False, False, True, True, None)              # q whole, a workspace
_PAIR_WS = (True, False, True, True, None)          # vLLM's pair, a workspace
_PAIR_WS_KS = (True, False, True, False, None)      # and a kv scale tensor


def _form(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule, kv_scale, lse_layout):
    """(form, q, q_pe, tensors) of any call: which optional arguments it
    gives, q or the pair's first part, the pair's second or None, and its
    tensors in the order the layouts are compared."""
    pair = type(q) in _PAIR_TYPES and len(q) == 2
    if pair:
        q, q_pe = q
        tensors = (q, kv_cache, block_table, seq_lens, out, lse, q_pe)  # a q_pe of None matches nothing
    else:
        q_pe = None
        tensors = (q, kv_cache, block_table, seq_lens, out, lse)
    if workspace is not None:
        tensors += (workspace,)
    if schedule is not None:
        tensors += (schedule,)
    if kv_scale is not None:
        tensors += (kv_scale,)
    return (pair, workspace is None, schedule is None, kv_scale is None, lse_layout), q, q_pe, tensors


# the torch tensor classes seen so far (torch.Tensor, nn.Parameter, ...):
# a set lookup on type(q) is the cheapest test for the fast path
_TORCH_TYPES = set()


def _learn_torch_type(obj):
    """Whether obj is a torch tensor (torch is then loaded); remembers its
    class for the next call."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        _TORCH_TYPES.add(type(obj))
        return True
    return False


@dataclass(frozen=True)
class Problem:
    """The static facts of a plan (mlt_decode_problem)."""
    n_heads: int
    sq: int
    d: int
    dl: int
    page_size: int
    q_dtype: DType
    kv_dtype: DType
    softmax_scale: float
    kv_scale: float
    max_batch: int
    views: bool = False      # runs may pass views (Runtime.plan(views=True))


@dataclass(frozen=True)
class Choice:
    """Which variant a call would run, and why (mlt_choice_info)."""
    reason: ChoiceReason     # EXACT_KEY, NEAREST_KEY or HEURISTIC
    family: str
    variant: str             # "tile_q=16,kv_granularity=64,..."
    key_batch: int           # the DB key used (exact/nearest): batch, mean keys, longest
    key_seq_len: int
    key_max_seq_len: int
    key_lengths: str         # how the key's lengths were made: "uniform", "long-tail", ...
    distance: float
    measured_ms: float       # the key's measured median, 0 for the heuristic
    source: str              # "user", "system" or "heuristic"
    length_aware: bool       # the variant cuts the work by the lengths on the GPU
    why: str


class Plan:
    """Made by Runtime.plan(); holds its runtime alive.

    workspace_size: bytes of device workspace run() needs (allocate once)
    schedule_size:  bytes of a step schedule (build_schedule), or 0
    """

    def __init__(self, runtime, problem, handle):
        self.runtime = runtime
        self.problem = problem
        self._lib = runtime.library
        self._handle = handle
        self.workspace_size = int(self._lib.mlt_plan_workspace_size(handle))
        self.schedule_size = int(self._lib.mlt_plan_schedule_size(handle))
        self._rules = CallRules(problem, runtime.device, self.schedule_size, self._lib)
        self._views = self._lib.supports_views
        self._plan_views = problem.views
        self._device = runtime.device
        self._mlt_run = self._lib.mlt_plan_run
        self._mlt_schedule = self._lib.mlt_plan_schedule
        self._streams = None  # TorchStreams, made on the first torch call
        self._last = None  # _layouts.LastLayout of the last call that passed the checks
        self._make_guard = _UNSET  # _layouts.tensor_guards(), looked for on the first torch call

    # ------------------------------------------------------------------
    # lifetime

    def close(self):
        """Destroys the C plan (also done when the plan is collected).  A
        graph that captured it must not be replayed afterwards."""
        if self._handle:
            self._lib.mlt_plan_destroy(self._handle)
            self._handle = 0

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        p = self.problem
        return (f"<mlatune.Plan N={p.n_heads} Sq={p.sq} D={p.d}/{p.dl} page={p.page_size} "
                f"{p.q_dtype.name}/{p.kv_dtype.name} max_batch={p.max_batch}{' views' if p.views else ''}>")

    # ------------------------------------------------------------------
    # queries

    def explain(self, batch, seq_len_hint=LENGTHS_UNKNOWN, max_seq_len_hint=0):
        """Which variant run() would launch for this batch and these hints."""
        info = ChoiceInfo()
        st = self._lib.mlt_plan_explain(self._handle, batch, seq_len_hint, max_seq_len_hint, ctypes.byref(info))
        if st:
            self._fail(st)
        return Choice(reason=ChoiceReason(info.reason), family=info.family.decode(), variant=info.variant.decode(),
                      key_batch=info.key_batch, key_seq_len=info.key_seq_len, key_max_seq_len=info.key_max_seq_len,
                      key_lengths=info.key_lengths.decode(), distance=info.distance, measured_ms=info.measured_ms,
                      source=info.source.decode(), length_aware=bool(info.length_aware), why=info.why.decode())

    # ------------------------------------------------------------------
    # calls

    def run(self, q, kv_cache, block_table, seq_lens, out, lse, workspace=None, *,
            seq_len_hint=LENGTHS_UNKNOWN, max_seq_len_hint=0, schedule=None, stream=None, kv_scale=None,
            lse_layout=None):
        """One decode call: checks every tensor (dtype, shape, device,
        layout, alignment; see _checks.py) and launches on `stream`
        (default: torch's current stream for torch tensors, else NULL).

        q:           [B, Sq, N, D] or [B*Sq, N, D]; or the pair
                     (ql_nope [.., N, Dl], q_pe [.., N, D - Dl]), vLLM's
                     form, passed as two pointers (no copy)
        kv_cache:    [pages, page_size, D] (or [pages, page_size, 1, D])
        block_table: int32 [>= B, max_blocks_per_seq]
        seq_lens:    int32 [B] keys per request, new tokens included; B is
                     the batch of the call
        out, lse:    outputs: [B, Sq, N, Dl] q_dtype, [B, Sq, N] float32
                     natural-log LSE (or the [B*Sq, ...] forms; lse
                     [B, N, Sq] with lse_layout="heads_first")
                     q (or its parts), out and lse may be strided views
                     (slices of larger tensors): their strides are passed
        workspace:   plan.workspace_size bytes (None when that is 0)
        seq_len_hint, max_seq_len_hint: host-side mean and longest keys per
                     request, which pick the variant; MLT_LENGTHS_UNKNOWN
                     (the default) runs a length-aware variant, right for
                     any lengths: use it when capturing a graph
        schedule:    memory build_schedule() filled for this step, or None
        kv_scale:    None (the plan's kv_scale), or a device tensor of one
                     float32 read at run time instead (vLLM's
                     layer._k_scale): a captured graph follows its changes
        lse_layout:  None / "tokens_first" (lse [B, Sq, N] or [B*Sq, N]) or
                     "heads_first" (lse [B, N, Sq], FlashMLA's)

        The views and kv_scale need libmlatune C API >= 0.2; an older
        library raises mlatune.Unsupported for them.
        """
        if self._make_guard is None and type(q) in _TORCH_TYPES and kv_scale is None and lse_layout is None:
            # no tensor guards in this torch (layouts read in Python): for
            # the commonest call (torch tensors, contiguous, q whole)
            # torch_pointers' one test per tensor reads no more than a
            # remembered layout would, so it is checked, not remembered
            try:
                ptrs = self._rules.torch_pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule)
            except AttributeError:  # some other argument is not a torch tensor
                ptrs = None
            if ptrs is not None:
                self._launch(ptrs, seq_len_hint, max_seq_len_hint, self._torch_stream(stream))
                return

        # the call's form (which optional arguments it gives) and its tensors
        # in order; the remembered answer holds for the same form only.
        # Engines' two forms are spelled out here: the contiguous call with
        # a workspace, and vLLM's pair with a workspace (and a kv scale
        # tensor); _form() makes the same of any other call, for a function
        # call and a few tuples more.
        if schedule is None and lse_layout is None and workspace is not None:
            if type(q) not in _PAIR_TYPES:
                if kv_scale is None:
                    form = _WS
                    q0 = q
                    q_pe = None
                    tensors = (q, kv_cache, block_table, seq_lens, out, lse, workspace)
                else:
                    form, q0, q_pe, tensors = _form(q, kv_cache, block_table, seq_lens, out, lse, workspace,
                                                    schedule, kv_scale, lse_layout)
            elif type(q) is tuple and len(q) == 2:
                q0, q_pe = q
                if kv_scale is None:
                    form = _PAIR_WS
                    tensors = (q0, kv_cache, block_table, seq_lens, out, lse, q_pe, workspace)
                else:
                    form = _PAIR_WS_KS
                    tensors = (q0, kv_cache, block_table, seq_lens, out, lse, q_pe, workspace, kv_scale)
            else:
                form, q0, q_pe, tensors = _form(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule,
                                                kv_scale, lse_layout)
        else:
            form, q0, q_pe, tensors = _form(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule,
                                            kv_scale, lse_layout)

        # the layouts of the last call that passed the checks (_layouts.py):
        # when these tensors have them, only the pointers are new
        last = self._last
        seen = None  # True: the last call's layouts; else what match() read of them
        if last is not None and (form is last.form or form == last.form):
            check = last.check
            if check is not None:  # last.match() inlined: a method call less per call
                try:
                    seen = check(*tensors) or None
                except TypeError:  # not all torch tensors
                    pass
            else:
                seen = last.match(tensors)
        if seen is True:
            qp = q0.data_ptr()
            kv = kv_cache.data_ptr()
            bt = block_table.data_ptr()
            sl = seq_lens.data_ptr()
            op = out.data_ptr()
            lp = lse.data_ptr()
            pp = q_pe.data_ptr() if q_pe is not None else 0
            ws = workspace.data_ptr() if workspace is not None else 0
            sc = schedule.data_ptr() if schedule is not None else 0
            ks = kv_scale.data_ptr() if kv_scale is not None else 0
            if not ((qp | pp | kv | op | ws | sc) & 15 or (bt | sl | lp | ks) & 3):
                batch, max_blocks, wsb, strides, current = last.answer
                if stream is None:
                    stream = current(self._device) if current is not None else 0
                elif type(stream) is not int:
                    stream = stream_handle(stream)
                try:
                    if strides is None:  # no view: the tail is zeros (_PLAIN's pad bytes)
                        args = _PLAIN.pack(batch, seq_len_hint, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb,
                                           max_seq_len_hint, sc)
                    else:  # the view strides, packed when the layouts were checked
                        args = _HEAD_PE.pack(batch, seq_len_hint, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb,
                                             max_seq_len_hint, sc, pp) + strides + _KV_SCALE.pack(ks)
                except struct.error:
                    raise self._bad_hints(seq_len_hint, max_seq_len_hint) from None
                st = self._mlt_run(self._handle, args, stream)
                if st:
                    self._fail(st)
                return
            # a misaligned pointer: the checks below name it

        ptrs = None
        if type(q) in _TORCH_TYPES and kv_scale is None and lse_layout is None:
            # the commonest call: torch tensors, contiguous, q whole
            try:
                ptrs = self._rules.torch_pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule)
            except AttributeError:  # some other argument is not a torch tensor
                pass
        if ptrs is not None:
            stream = self._torch_stream(stream)
        else:
            ptrs, stream = self._pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule, stream,
                                          kv_scale, lse_layout)
        self._remember(tensors, form, ptrs, q_pe is None and kv_scale is None, seen)
        self._launch(ptrs, seq_len_hint, max_seq_len_hint, stream)

    def _launch(self, ptrs, seq_len_hint, max_seq_len_hint, stream):
        """mlt_plan_run with checked pointers and views (CallRules.pointers'
        tuple)."""
        batch, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb, sc, views = ptrs
        try:
            if views is NO_VIEWS:
                args = _PLAIN.pack(batch, seq_len_hint, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb,
                                   max_seq_len_hint, sc)
            else:
                args = _ARGS.pack(batch, seq_len_hint, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb,
                                  max_seq_len_hint, sc, *views)
        except struct.error:
            raise self._bad_hints(seq_len_hint, max_seq_len_hint) from None
        st = self._mlt_run(self._handle, args, stream)
        if st:
            self._fail(st)

    def run_raw(self, batch, q, kv_cache, block_table, seq_lens, out, lse, workspace=0, workspace_size=0,
                max_blocks_per_seq=1, seq_len_hint=LENGTHS_UNKNOWN, max_seq_len_hint=0, schedule=0, stream=0, *,
                q_pe=0, q_strides=ZERO3, q_pe_strides=ZERO3, out_strides=ZERO3, lse_strides=ZERO3,
                kv_scale_device=0):
        """mlt_plan_run with integer device pointers and an integer stream,
        nothing checked here (the C runtime still checks batch, nulls,
        alignment and the views' strides): the fastest path, for callers
        that validated their buffers once.  The views are mlt_decode_args'
        fields of the same names (strides in elements per request, token
        and head; (0, 0, 0): contiguous)."""
        if (q_pe or kv_scale_device or q_strides is not ZERO3 or q_pe_strides is not ZERO3
                or out_strides is not ZERO3 or lse_strides is not ZERO3):
            if not (self._views and self._plan_views):
                given = [name for name, value in (("q_pe", q_pe), ("q_strides", q_strides),
                                                  ("q_pe_strides", q_pe_strides), ("out_strides", out_strides),
                                                  ("lse_strides", lse_strides), ("kv_scale_device", kv_scale_device))
                         if (tuple(value) != ZERO3 if isinstance(value, (tuple, list)) else value)]
                if given and not self._views:
                    raise self._rules._too_old("run_raw: q_pe, strides or kv_scale_device")
                if given:
                    raise self._rules.no_views(f"run_raw: {', '.join(given)}")
            args = _ARGS.pack(batch, seq_len_hint, max_blocks_per_seq, q, kv_cache, block_table, seq_lens, out,
                              lse, workspace, workspace_size, max_seq_len_hint, schedule, q_pe, *q_strides,
                              *q_pe_strides, *out_strides, *lse_strides, kv_scale_device)
        else:
            args = _PLAIN.pack(batch, seq_len_hint, max_blocks_per_seq, q, kv_cache, block_table, seq_lens, out,
                               lse, workspace, workspace_size, max_seq_len_hint, schedule)
        st = self._mlt_run(self._handle, args, stream)
        if st:
            self._fail(st)

    def build_schedule(self, q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule, *,
                       seq_len_hint=LENGTHS_UNKNOWN, max_seq_len_hint=0, stream=None, kv_scale=None,
                       lse_layout=None):
        """Per step, once for all layers (mlt_plan_schedule): fills
        `schedule` (plan.schedule_size bytes) from seq_lens on the GPU, to
        be passed as run(schedule=...) by every layer of the step with the
        same batch, hints and seq_lens contents.  Takes the same tensors as
        run(), in the same forms, and checks them as run() does (the C call
        itself reads only the batch, the hints and seq_lens).  Launches
        nothing when the call dispatches to a fixed-split variant.
        Graph-safe: capture it with the runs."""
        if schedule is None:
            raise Error(Status.ERR_INVALID_ARGUMENT, "schedule: missing (None); allocate plan.schedule_size bytes")
        ptrs, stream = self._pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule, stream,
                                      kv_scale, lse_layout)
        batch, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb, sc, views = ptrs
        try:
            args = _ARGS.pack(batch, seq_len_hint, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb,
                              max_seq_len_hint, 0, *views)  # once per step: no need for the short form
        except struct.error:
            raise self._bad_hints(seq_len_hint, max_seq_len_hint) from None
        st = self._mlt_schedule(self._handle, args, sc, stream)
        if st:
            self._fail(st)

    # ------------------------------------------------------------------
    # helpers

    def _pointers(self, q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule, stream, kv_scale=None,
                  lse_layout=None):
        """The checked pointers and views, and the stream handle, for any
        form of call (run() inlines the commonest)."""
        rules = self._rules
        heads_first = rules.heads_first(lse_layout)
        q_pe = None
        if isinstance(q, (tuple, list)):
            q, q_pe = rules.pair(q)
        if type(q) in _TORCH_TYPES or _learn_torch_type(q):
            try:
                ptrs = rules.torch_views(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule,
                                         kv_scale, heads_first, q_pe)
            except AttributeError:  # some other argument is not a torch tensor
                ptrs = rules.pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule,
                                      kv_scale, heads_first, q_pe)
            if stream is None:
                return ptrs, (self._streams or self._torch_streams()).current(self._device)
        else:
            ptrs = rules.pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule,
                                  kv_scale, heads_first, q_pe)
            if stream is None:
                return ptrs, 0
        return ptrs, stream if type(stream) is int else stream_handle(stream)

    def _remember(self, tensors, form, ptrs, plain, seen=None):
        """Keeps the layouts of a call that passed the checks (_layouts.py)
        and what a call of the same layouts needs besides its pointers
        (ptrs: CallRules.pointers()' tuple; plain: q whole and no kv scale
        tensor; seen: what match() read of them, if anything); torch's
        tensor guards are looked for on the first torch call."""
        if not hasattr(tensors[0], "get_device"):  # __cuda_array_interface__ objects, DeviceArrays: no layouts
            self._last = None
            return
        make_guard = self._make_guard
        torch_call = type(tensors[0]) in _TORCH_TYPES
        if make_guard is _UNSET:
            if torch_call:
                make_guard = self._make_guard = tensor_guards()
            else:
                make_guard = None  # torch-shaped objects: read in Python (a later torch call still looks)
        views = ptrs[-1]
        # a call with no view packs 13 values (_PLAIN); else the view
        # strides, the same for the same layouts, are packed here once
        strides = None if plain and views is NO_VIEWS else _STRIDES.pack(*views[1:13])
        # the stream of a call without one: torch's current (torch tensors), else NULL
        current = (self._streams or self._torch_streams()).current if torch_call else None
        answer = (ptrs[0], ptrs[1], ptrs[9], strides, current)
        self._last = remember(tensors, form, answer, make_guard, seen if seen is not True else None)

    def _torch_stream(self, stream):
        """The stream handle of a call of torch tensors."""
        if stream is None:
            return (self._streams or self._torch_streams()).current(self._device)
        return stream if type(stream) is int else stream_handle(stream)

    def _torch_streams(self):
        self._streams = TorchStreams()
        return self._streams

    def _bad_hints(self, seq_len_hint, max_seq_len_hint):
        return Error(Status.ERR_INVALID_ARGUMENT,
                     f"seq_len_hint {seq_len_hint!r} / max_seq_len_hint {max_seq_len_hint!r}: "
                     f"expected integers in the C int range")

    def _fail(self, status):
        raise Error(status, self._lib.last_error() or self._lib.status_string(status))

