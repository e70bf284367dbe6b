"""Helpers shared by the Python package's tests (no test cases here).

  header()          runtime/include/mlatune.h (or $MLATUNE_INCLUDE_DIRS)
  compiler()        the C compiler ($CC, else gcc, else cc), or None
  stub_library()    tests/stub/stub_mlatune.c built against the header into
                    a temporary folder (once per process); None if no
                    compiler; stub_library(api_0_1=True): as a 0.1 library
  real_library()    $MLATUNE_LIBRARY, the library under test, or None
  FakeCudaArray     an object with __cuda_array_interface__ and no memory
  FakeTorchTensor   an object shaped like a torch tensor (data_ptr(), shape,
                    dtype, stride(), ...) whose every fact can be changed in
                    place, as resize_ / set_ / `.data =` change a tensor's
  FactsGuard        torch's TensorGuards' contract in Python (a stand-in:
                    torch 1.x has none, and fakes are not tensors)
  stub_call_args()  a complete, valid set of fake tensors for a plan
"""

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)

if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

import mlatune  # noqa: E402
from mlatune import _capi  # noqa: E402


def include_dirs():
    env = os.environ.get("MLATUNE_INCLUDE_DIRS")
    if env:
        return [d for d in env.split(os.pathsep) if d]
    return [os.path.join(REPO, "runtime", "include")]


def header():
    """The path of mlatune.h, or None."""
    for d in include_dirs():
        path = os.path.join(d, "mlatune.h")
        if os.path.exists(path):
            return path
    return None


def compiler():
    for cc in (os.environ.get("CC"), "gcc", "cc"):
        if cc and shutil.which(cc):
            return shutil.which(cc)
    return None


_tmp = None


def temp_dir():
    """A folder that lives as long as the process."""
    global _tmp
    if _tmp is None:
        _tmp = tempfile.TemporaryDirectory(prefix="mlatune-test-")
    return _tmp.name


def compile_c(source, output, shared, defines=()):
    """Compiles one C file against the header; raises with the compiler's
    output on failure."""
    cmd = [compiler(), "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror", "-O2"]
    cmd += ["-D" + d for d in defines]
    cmd += ["-I" + d for d in include_dirs()]
    if shared:
        cmd += ["-shared", "-fPIC"]
    cmd += ["-o", output, source]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return output


_stubs = {}


def stub_library(api_0_1=False):
    """A loaded mlatune.Library over the stub, with its stub_* functions
    typed, or None when no C compiler or header is found.  api_0_1: the
    stub as a C API 0.1 library (no mlt_api_version, no views)."""
    if api_0_1 not in _stubs:
        if compiler() is None or header() is None:
            return None
        name = "libmlatune_stub_0_1.so" if api_0_1 else "libmlatune_stub.so"
        path = compile_c(os.path.join(HERE, "stub", "stub_mlatune.c"), os.path.join(temp_dir(), name), shared=True,
                         defines=["STUB_API_0_1"] if api_0_1 else [])
        lib = mlatune.load_library(path)
        cdll = lib._cdll
        for name, restype in (("stub_last_args", ctypes.POINTER(_capi.DecodeArgs)),
                              ("stub_last_stream", ctypes.c_void_p), ("stub_last_schedule", ctypes.c_void_p),
                              ("stub_run_count", ctypes.c_longlong), ("stub_schedule_count", ctypes.c_longlong),
                              ("stub_last_options", ctypes.POINTER(_capi.RuntimeOptions)),
                              ("stub_plan_problem", ctypes.POINTER(_capi.DecodeProblem)),
                              ("stub_time_runs", ctypes.c_double),
                              ("stub_last_form", ctypes.POINTER(ctypes.c_int)),
                              ("stub_form_calls", ctypes.c_longlong)):
            if api_0_1 and name.startswith("stub_") and "form" in name:
                continue  # a 0.1 library has no mlt_prefill_choose_form
            getattr(cdll, name).restype = restype
        cdll.stub_plan_problem.argtypes = [ctypes.c_void_p]
        cdll.stub_time_runs.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        _stubs[api_0_1] = lib
    return _stubs[api_0_1]


def real_library():
    """The library under test ($MLATUNE_LIBRARY), loaded, or None."""
    path = os.environ.get("MLATUNE_LIBRARY")
    return mlatune.load_library(path) if path else None


class FakeCudaArray:
    """__cuda_array_interface__ (version 3) over a made-up pointer: enough
    for the package's checks, never dereferenced (the stub reads nothing).
    typestr as the interface spells it ("<f2", "<V2" for bfloat16, "<i4",
    "<f4", "|u1"); strides in bytes or None; device: an ordinal, "cpu"
    (an object that says it is on the host), or None (says nothing)."""

    def __init__(self, ptr, shape, typestr, strides=None, device=0):
        self.ptr, self.shape, self.typestr, self.strides = ptr, tuple(shape), typestr, strides
        if device == "cpu":
            self.device = type("HostDevice", (), {"type": "cpu"})()
        elif device is not None:
            self.device = device

    @property
    def __cuda_array_interface__(self):
        return {"version": 3, "data": (self.ptr, False), "shape": self.shape, "typestr": self.typestr,
                "strides": self.strides, "stream": None}


class FakeTorchTensor:
    """What the package reads of a torch tensor, over a made-up pointer:
    shape, dtype (a name: "bfloat16", ...), get_device(), is_contiguous(),
    stride() (elements), data_ptr(), element_size().  Every field may be
    changed in place (strides=None: row-major for the current shape)."""

    ITEMSIZE = {"bfloat16": 2, "float16": 2, "float8_e4m3fn": 1, "float32": 4, "int32": 4, "int64": 8, "uint8": 1}

    def __init__(self, ptr, shape, dtype, strides=None, device=0):
        self.ptr, self.shape, self.dtype, self.strides, self.device = ptr, tuple(shape), dtype, strides, device

    def data_ptr(self):
        return self.ptr

    def get_device(self):
        return self.device

    def element_size(self):
        return self.ITEMSIZE[self.dtype]

    def stride(self):
        if self.strides is not None:
            return tuple(self.strides)
        strides, step = [], 1
        for s in reversed(self.shape):
            strides.append(step)
            step *= s
        return tuple(reversed(strides))

    def is_contiguous(self):
        step = 1
        for s, st in zip(reversed(self.shape), reversed(self.stride())):
            if s != 1 and st != step:
                return False
            step *= s
        return True


class FactsGuard:
    """TensorGuards' contract in Python: made over a tuple of tensors (torch
    tensors or FakeTorchTensors; TypeError for anything else, as
    TensorGuards raises for a non-tensor), check(*tensors) says whether
    each has the type, dtype, device, shape and strides it had."""

    def __init__(self, tensors):
        self.facts = [self.facts_of(t) for t in tensors]

    @staticmethod
    def facts_of(t):
        try:
            return type(t), t.dtype, t.get_device(), tuple(t.shape), tuple(t.stride())
        except AttributeError:
            raise TypeError(f"expected Tensor(), got {type(t).__name__}") from None

    def check(self, *tensors):
        return len(tensors) == len(self.facts) and all(self.facts_of(t) == f for t, f in zip(tensors, self.facts))


TYPESTR = {"bfloat16": "<V2", "float16": "<f2", "float8_e4m3fn": "|u1", "float32": "<f4", "int32": "<i4",
           "uint8": "|u1"}


class PointerPool:
    """Distinct, 256-byte aligned made-up device addresses."""

    def __init__(self, start=0x7F0000000000):
        self.next = start

    def take(self, nbytes):
        p = self.next
        self.next += (nbytes + 255) // 256 * 256 + 256
        return p


def stub_call_args(plan, batch=2, max_blocks=4, pages=16, device=0, token_major=False, torch_shaped=False):
    """A valid call for plan: dict of FakeCudaArrays (FakeTorchTensors when
    torch_shaped) by argument name (q, kv_cache, block_table, seq_lens,
    out, lse, workspace, schedule)."""
    p = plan.problem
    qd = {0: "bfloat16", 1: "float16"}[int(p.q_dtype)]
    kvd = {0: "bfloat16", 1: "float16", 2: "float8_e4m3fn"}[int(p.kv_dtype)]
    pool = PointerPool()

    def arr(shape, dtype):
        item = {"bfloat16": 2, "float16": 2, "float8_e4m3fn": 1, "float32": 4, "int32": 4, "uint8": 1}[dtype]
        n = 1
        for s in shape:
            n *= s
        if torch_shaped:
            return FakeTorchTensor(pool.take(n * item), shape, dtype, device=device)
        return FakeCudaArray(pool.take(n * item), shape, TYPESTR[dtype], device=device)

    lead = (batch * p.sq,) if token_major else (batch, p.sq)
    return {
        "q": arr(lead + (p.n_heads, p.d), qd),
        "kv_cache": arr((pages, p.page_size, p.d), kvd),
        "block_table": arr((batch, max_blocks), "int32"),
        "seq_lens": arr((batch,), "int32"),
        "out": arr(lead + (p.n_heads, p.dl), qd),
        "lse": arr(lead + (p.n_heads,), "float32"),
        "workspace": arr((max(plan.workspace_size, 1),), "uint8"),
        "schedule": arr((max(plan.schedule_size, 1),), "uint8"),
    }
