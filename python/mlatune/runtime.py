"""Runtime: the GPU, the tuning databases and the JIT (mlt_runtime_*)."""

import ctypes
import operator
import os
import weakref
from dataclasses import dataclass

from ._capi import DecodeProblem, DType, FormInfo, LogLevel, PrefillForm, RuntimeOptions, Status
from ._errors import Error, Unsupported
from ._library import Library, load_library
from .plan import Plan, Problem

# names accepted for dtypes, besides mlatune.DType and torch dtypes
_DTYPE_NAMES = {
    "bfloat16": DType.BF16, "bf16": DType.BF16,
    "float16": DType.FP16, "fp16": DType.FP16, "half": DType.FP16,
    "float8_e4m3fn": DType.FP8_E4M3, "fp8_e4m3": DType.FP8_E4M3, "fp8": DType.FP8_E4M3, "fp8_e4m3fn": DType.FP8_E4M3,
    "fp8e4m3": DType.FP8_E4M3,
    "float8_e4m3fnuz": DType.FP8_E4M3_FNUZ, "fp8_e4m3fnuz": DType.FP8_E4M3_FNUZ, "fp8e4m3fnuz": DType.FP8_E4M3_FNUZ,
}


def as_dtype(value, name="dtype"):
    """A DType from a DType, its int, a name ("bfloat16", "fp8", ...) or a
    torch dtype (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e4m3fnuz)."""
    if isinstance(value, DType):
        return value
    if isinstance(value, int):
        try:
            return DType(value)
        except ValueError:
            pass
    else:
        text = str(value)
        text = text[6:] if text.startswith("torch.") else text
        if text in _DTYPE_NAMES:
            return _DTYPE_NAMES[text]
    raise Error(Status.ERR_INVALID_ARGUMENT,
                f"{name}: {value!r} is not a dtype the runtime knows (bfloat16, float16, float8_e4m3fn, float8_e4m3fnuz)")


def _path_arg(value):
    return None if value is None else os.fsencode(value)


def _c_int_arg(value, name):
    """value as a Python int that a C int holds, else Error naming it: ctypes
    would cut a larger one to 32 bits without a word (2**32 + 5 -> 5)."""
    try:
        v = operator.index(value)
    except TypeError:
        raise Error(Status.ERR_INVALID_ARGUMENT, f"{name}: expected an integer, got {value!r}") from None
    if isinstance(value, bool) or not -2**31 <= v < 2**31:
        raise Error(Status.ERR_INVALID_ARGUMENT, f"{name}: {value!r} is not an integer a C int holds")
    return v


@dataclass(frozen=True)
class FormChoice:
    """Which prefill form a chunk should take, and why (mlt_form_info)."""
    form: PrefillForm        # MQA (absorbed) or MHA (decompressed); MHA on a tie
    measured: bool           # True: from measured points; False: the flop rule
    source: str              # "user", "system", "user+system" or "rule"
    key_compute_units: int   # the measured device, heads and context used (0 by the rule)
    key_n_heads: int
    key_context: int
    lo_sq: int               # the measured sq around sq (equal when sq is one or outside them)
    hi_sq: int
    mqa_ms: float            # both forms' times at sq (interpolated); 0 by the rule
    mha_ms: float
    boundary_sq: int         # at key_context (the rule: at context), the smallest sq of MHA; 0: none
    why: str


class Runtime:
    """A runtime on one GPU (mlt_runtime_create).

    device:     GPU ordinal, the same numbering torch uses
    user_db, system_db: tuning databases (None: the defaults mlatune.h lists)
    cache_dir:  compiled-kernel cache (None: the default; "" turns it off)
    log_level:  mlatune.LogLevel (QUIET, WARN, INFO), messages on stderr
    library:    a path to libmlatune or a loaded mlatune.Library (None: the
                search that mlatune.load_library describes)

    The calling thread must have the device current when it runs plans:
    true for a thread that has used torch on that device; otherwise call
    bind_thread().  Plans hold their runtime alive; close() closes them
    first.
    """

    def __init__(self, device=0, user_db=None, system_db=None, cache_dir=None, log_level=LogLevel.WARN,
                 library=None):
        lib = library if isinstance(library, Library) else load_library(library)
        self.library = lib
        self._handle = 0
        self._plans = weakref.WeakSet()
        opts = RuntimeOptions()
        lib.mlt_runtime_options_default(ctypes.byref(opts))
        opts.device = int(device)
        opts.user_db = _path_arg(user_db)
        opts.system_db = _path_arg(system_db)
        opts.cache_dir = _path_arg(cache_dir)
        opts.log_level = int(LogLevel(log_level))
        handle = ctypes.c_void_p()
        st = lib.mlt_runtime_create(ctypes.byref(opts), ctypes.byref(handle))
        if st:
            raise Error(st, lib.last_error() or lib.status_string(st))
        self._handle = handle.value
        self.device = int(device)
        self.arch = (lib.mlt_runtime_arch(self._handle) or b"").decode()

    def plan(self, n_heads, *, sq=1, d=576, dl=512, page_size, q_dtype, kv_dtype, softmax_scale, kv_scale=1.0,
             max_batch, views=False):
        """A Plan for this problem (mlt_plan_create): compiles, or loads from
        the cache, every variant the plan may dispatch to, so that nothing
        compiles later (in particular not during graph capture).

        views: True lets its runs pass views (q as the pair (ql_nope, q_pe),
        strided q / out / lse, lse_layout="heads_first", a device kv_scale
        tensor); the kernels then place every row through the call's
        strides, which costs time (up to ~10% on small shapes on the H100).
        False (the default): contiguous tensors only, and a run given a view
        raises mlatune.Error naming it."""
        if isinstance(views, bool) or views in (0, 1):
            views = bool(views)
        else:
            raise Error(Status.ERR_INVALID_ARGUMENT, f"views: expected True or False, got {views!r}")
        problem = Problem(n_heads=int(n_heads), sq=int(sq), d=int(d), dl=int(dl), page_size=int(page_size),
                          q_dtype=as_dtype(q_dtype, "q_dtype"), kv_dtype=as_dtype(kv_dtype, "kv_dtype"),
                          softmax_scale=float(softmax_scale), kv_scale=float(kv_scale), max_batch=int(max_batch),
                          views=views)
        c = DecodeProblem(n_heads=problem.n_heads, sq=problem.sq, d=problem.d, dl=problem.dl,
                          page_size=problem.page_size, q_dtype=int(problem.q_dtype), kv_dtype=int(problem.kv_dtype),
                          softmax_scale=problem.softmax_scale, kv_scale=problem.kv_scale, max_batch=problem.max_batch,
                          views=int(problem.views))
        handle = ctypes.c_void_p()
        st = self.library.mlt_plan_create(self._live(), ctypes.byref(c), ctypes.byref(handle))
        if st:
            self._fail(st)
        plan = Plan(self, problem, handle.value)
        self._plans.add(plan)
        return plan

    def choose_form(self, n_heads, sq, context, q_dtype="bfloat16", kv_dtype="bfloat16"):
        """Which form a chunk of `sq` new tokens after `context` tokens of one
        request should take on this GPU (mlt_prefill_choose_form): MQA, the
        absorbed form (Plan.run at Sq = the chunk), or MHA, the decompressed
        one; from the points `mla-tune crossover` measured into the tuning
        DBs, or the flop rule where none were measured.  A FormChoice."""
        fn = self.library.mlt_prefill_choose_form
        if fn is None:
            raise Unsupported(f"choose_form: {self.library.path} has no mlt_prefill_choose_form (an older "
                              f"libmlatune)")
        args = [_c_int_arg(n_heads, "n_heads"), int(as_dtype(q_dtype, "q_dtype")), int(as_dtype(kv_dtype, "kv_dtype")),
                _c_int_arg(sq, "sq"), _c_int_arg(context, "context")]
        info = FormInfo()
        st = fn(self._live(), *args, ctypes.byref(info))
        if st:
            self._fail(st)
        return FormChoice(form=PrefillForm(info.form), measured=bool(info.measured), source=info.source.decode(),
                          key_compute_units=info.key_compute_units, key_n_heads=info.key_n_heads,
                          key_context=info.key_context, lo_sq=info.lo_sq, hi_sq=info.hi_sq, mqa_ms=info.mqa_ms,
                          mha_ms=info.mha_ms, boundary_sq=info.boundary_sq,
                          why=info.why.decode("utf-8", "replace"))

    def bind_thread(self):
        """Makes the runtime's device current on the calling thread."""
        st = self.library.mlt_runtime_bind_thread(self._live())
        if st:
            self._fail(st)

    def record_calls(self, on=True):
        """Counts the calls of plans created after this, per shape
        (mlt_runtime_record_calls; MLA_TUNE_RECORD_CALLS=1 turns it on at
        creation): the counts go to the user DB when a plan is closed, and
        `mla-tune sweep --recorded` tunes those shapes.  A relaxed atomic
        add per call; on=False stops it for later plans."""
        fn = self.library.mlt_runtime_record_calls
        if fn is None:
            raise Unsupported(f"record_calls: {self.library.path} has no mlt_runtime_record_calls (an older "
                              f"libmlatune)")
        st = fn(self._live(), 1 if on else 0)
        if st:
            self._fail(st)

    def synchronize(self):
        """Waits for all work on the device (not needed between calls)."""
        st = self.library.mlt_synchronize(self._live())
        if st:
            self._fail(st)

    # Device memory for programs with no GPU framework of their own (torch
    # users pass torch tensors instead).  Pointers are ints; wrap them in
    # mlatune.DeviceArray to pass them to Plan.run.  Copies are synchronous.

    def alloc(self, nbytes):
        """nbytes of device memory (mlt_device_alloc): its address."""
        ptr = ctypes.c_void_p()
        st = self.library.mlt_device_alloc(self._live(), nbytes, ctypes.byref(ptr))
        if st:
            self._fail(st)
        return ptr.value or 0

    def free(self, ptr):
        st = self.library.mlt_device_free(self._live(), ptr)
        if st:
            self._fail(st)

    def copy_to_device(self, ptr, data):
        """Copies a bytes-like object to device address ptr."""
        view = memoryview(data).cast("B")
        buf = (ctypes.c_char * len(view)).from_buffer_copy(view)
        st = self.library.mlt_copy_to_device(self._live(), ptr, buf, len(view))
        if st:
            self._fail(st)

    def copy_to_host(self, ptr, nbytes):
        """nbytes from device address ptr, as bytes."""
        buf = ctypes.create_string_buffer(nbytes)
        st = self.library.mlt_copy_to_host(self._live(), buf, ptr, nbytes)
        if st:
            self._fail(st)
        return buf.raw

    def close(self):
        """Destroys the plans made here, then the runtime."""
        if self._handle:
            for plan in list(self._plans):
                plan.close()
            self.library.mlt_runtime_destroy(self._handle)
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
        return f"<mlatune.Runtime device={self.device} arch={self.arch} {'open' if self._handle else 'closed'}>"

    def _live(self):
        if not self._handle:
            raise Error(Status.ERR_INVALID_ARGUMENT, "runtime is closed")
        return self._handle

    def _fail(self, status):
        raise Error(status, self.library.last_error() or self.library.status_string(status))
