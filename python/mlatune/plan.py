"""Plan: one MLA decode problem, ready to run (mlt_plan_*).

Per call, run() checks the tensors (_checks.py), packs mlt_decode_args and
calls mlt_plan_run; run_raw() skips the checks and takes integers.

Why the arguments are packed into a new bytes object per call rather than
stored into one ctypes struct kept by the plan: a plan may be run from
several threads at once (mlatune.h), and a shared struct could be refilled
by another thread between the store and the call; a bytes object is private
to its call.  It is also the cheaper of the two: one struct.pack of all the
fields (about 0.3 us) against one ctypes attribute store per field (about
0.06 us each, 13 fields).  The layout comes from the ctypes mirror
(_capi.struct_packer), which tests/test_layout.py compares with the header.
No device memory is allocated and nothing synchronises.
"""

import ctypes
import struct
import sys
from dataclasses import dataclass

from ._capi import LENGTHS_UNKNOWN, ChoiceInfo, ChoiceReason, DecodeArgs, DType, Status, struct_packer
from ._checks import CallRules
from ._errors import Error, Unsupported
from ._library import SPLIT_Q_VERSION
from ._streams import TorchStreams, stream_handle

_ARGS = struct_packer(DecodeArgs)

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
        self._rules = CallRules(problem, runtime.device, self.schedule_size)
        self._device = runtime.device
        self._mlt_run = self._lib.mlt_plan_run
        self._mlt_schedule = self._lib.mlt_plan_schedule
        self._streams = None  # TorchStreams, made on the first torch call

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
                f"{p.q_dtype.name}/{p.kv_dtype.name} max_batch={p.max_batch}>")

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
            seq_len_hint=LENGTHS_UNKNOWN, max_seq_len_hint=0, schedule=None, stream=None):
        """One decode call: checks every tensor (dtype, shape, device,
        contiguity, alignment; see _checks.py) and launches on `stream`
        (default: torch's current stream for torch tensors, else NULL).

        q:           [B, Sq, N, D] or [B*Sq, N, D]; or (ql_nope, q_pe),
                     which needs a newer libmlatune (mlatune.Unsupported)
        kv_cache:    [pages, page_size, D] (or [pages, page_size, 1, D])
        block_table: int32 [>= B, max_blocks_per_seq]
        seq_lens:    int32 [B] keys per request, new tokens included; B is
                     the batch of the call
        out, lse:    outputs: [B, Sq, N, Dl] q_dtype, [B, Sq, N] float32
                     natural-log LSE (or the [B*Sq, ...] forms)
        workspace:   plan.workspace_size bytes (None when that is 0)
        seq_len_hint, max_seq_len_hint: host-side mean and longest keys per
                     request, which pick the variant; MLT_LENGTHS_UNKNOWN
                     (the default) runs a length-aware variant, right for
                     any lengths: use it when capturing a graph
        schedule:    memory build_schedule() filled for this step, or None
        """
        rules = self._rules
        if type(q) in _TORCH_TYPES:
            try:
                ptrs = rules.torch_pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule)
            except AttributeError:  # some other argument is not a torch tensor
                ptrs = rules.pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule)
            if stream is None:
                stream = (self._streams or self._torch_streams()).current(self._device)
            elif type(stream) is not int:
                stream = stream_handle(stream)
        elif isinstance(q, (tuple, list)):
            return self._run_split_q(q, kv_cache, block_table, seq_lens, out, lse, workspace,
                                     seq_len_hint, max_seq_len_hint, schedule, stream)
        elif _learn_torch_type(q):
            return self.run(q, kv_cache, block_table, seq_lens, out, lse, workspace, seq_len_hint=seq_len_hint,
                            max_seq_len_hint=max_seq_len_hint, schedule=schedule, stream=stream)
        else:
            ptrs = rules.pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule)
            stream = 0 if stream is None else stream_handle(stream)
        batch, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb, sc = ptrs
        try:
            args = _ARGS.pack(batch, seq_len_hint, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb,
                              max_seq_len_hint, sc)
        except struct.error:
            raise self._bad_hints(seq_len_hint, max_seq_len_hint) from None
        st = self._mlt_run(self._handle, args, stream)
        if st:
            self._fail(st)

    def run_raw(self, batch, q, kv_cache, block_table, seq_lens, out, lse, workspace=0, workspace_size=0,
                max_blocks_per_seq=1, seq_len_hint=LENGTHS_UNKNOWN, max_seq_len_hint=0, schedule=0, stream=0):
        """mlt_plan_run with integer device pointers and an integer stream,
        nothing checked here (the C runtime still checks batch, nulls and
        alignment): the fastest path, for callers that validated their
        buffers once."""
        st = self._mlt_run(self._handle, _ARGS.pack(batch, seq_len_hint, max_blocks_per_seq, q, kv_cache,
                                                    block_table, seq_lens, out, lse, workspace, workspace_size,
                                                    max_seq_len_hint, schedule), stream)
        if st:
            self._fail(st)

    def build_schedule(self, q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule, *,
                       seq_len_hint=LENGTHS_UNKNOWN, max_seq_len_hint=0, stream=None):
        """Per step, once for all layers (mlt_plan_schedule): fills
        `schedule` (plan.schedule_size bytes) from seq_lens on the GPU, to
        be passed as run(schedule=...) by every layer of the step with the
        same batch, hints and seq_lens contents.  Takes the same tensors as
        run() (the C call checks them all).  Launches nothing when the call
        dispatches to a fixed-split variant.  Graph-safe: capture it with
        the runs."""
        if schedule is None:
            raise Error(Status.ERR_INVALID_ARGUMENT, "schedule: missing (None); allocate plan.schedule_size bytes")
        ptrs, stream = self._pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule, stream)
        batch, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb, sc = ptrs
        try:
            args = _ARGS.pack(batch, seq_len_hint, max_blocks, qp, kv, bt, sl, op, lp, ws, wsb,
                              max_seq_len_hint, 0)
        except struct.error:
            raise self._bad_hints(seq_len_hint, max_seq_len_hint) from None
        st = self._mlt_schedule(self._handle, args, sc, stream)
        if st:
            self._fail(st)

    # ------------------------------------------------------------------
    # helpers

    def _pointers(self, q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule, stream):
        """The checked pointers and the stream handle (run() inlines this)."""
        if type(q) in _TORCH_TYPES or _learn_torch_type(q):
            try:
                ptrs = self._rules.torch_pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule)
            except AttributeError:  # some other argument is not a torch tensor
                ptrs = self._rules.pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule)
            if stream is None:
                return ptrs, (self._streams or self._torch_streams()).current(self._device)
        else:
            ptrs = self._rules.pointers(q, kv_cache, block_table, seq_lens, out, lse, workspace, schedule)
            if stream is None:
                return ptrs, 0
        return ptrs, stream_handle(stream)

    def _torch_streams(self):
        self._streams = TorchStreams()
        return self._streams

    def _run_split_q(self, q, kv_cache, block_table, seq_lens, out, lse, workspace,
                     seq_len_hint, max_seq_len_hint, schedule, stream):
        """q = (ql_nope [.., N, Dl], q_pe [.., N, D - Dl]), vLLM's form.

        The C API takes q as one pointer today; the split form needs two
        pointers with strides in mlt_decode_args (issue 27).  Concatenating
        here would allocate a tensor per call, so it is refused instead.
        When the fields exist: add them to _capi.DecodeArgs, then here check
        the parts (self._rules.q_pair gives their pointers), pack them with
        q = 0, and call mlt_plan_run as run() does."""
        if len(q) != 2:
            raise Error(Status.ERR_INVALID_ARGUMENT,
                        f"q: expected one tensor or a pair (ql_nope, q_pe), got a sequence of {len(q)}")
        lib = self._lib
        if not lib.supports_split_q:
            raise Unsupported(
                f"q: the split form (ql_nope, q_pe) needs libmlatune API >= "
                f"{SPLIT_Q_VERSION[0]}.{SPLIT_Q_VERSION[1]}, which takes the two parts as separate pointers; "
                f"{lib.path} has API {lib.version[0]}.{lib.version[1]}. Pass q as one "
                f"[B, Sq, N, {self.problem.d}] tensor (the package does not concatenate: that would "
                f"allocate per call)")
        raise Unsupported("q: this libmlatune takes the split form, but this mlatune package predates it: "
                          "update the package")

    def _bad_hints(self, seq_len_hint, max_seq_len_hint):
        return Error(Status.ERR_INVALID_ARGUMENT,
                     f"seq_len_hint {seq_len_hint!r} / max_seq_len_hint {max_seq_len_hint!r}: "
                     f"expected integers in the C int range")

    def _fail(self, status):
        raise Error(status, self._lib.last_error() or self._lib.status_string(status))

