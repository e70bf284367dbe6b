"""What the package needs to know of a tensor argument, from whatever holds it.

Three kinds of objects are taken:

  * torch tensors, duck-typed (data_ptr(), dtype, shape, stride(),
    get_device(), is_contiguous()): torch is never imported here, so the
    package imports and runs without it;
  * anything with __cuda_array_interface__ (versions 2 and 3: data, shape,
    typestr, strides): CuPy, Numba, and others;
  * mlatune.DeviceArray, a plain (pointer, shape, dtype) record for memory
    that has no framework object (mlt_device_alloc, another library).

describe() turns any of them into a TensorView; the per-call fast path for
torch tensors (plan.py) reads the attributes directly and falls back to
describe() only to word an error.
"""

import sys
from typing import NamedTuple, Optional, Tuple

from ._capi import Status
from ._errors import Error

# canonical dtype names, as torch spells them
BF16, F16, FP8, F32, I32, U8, I8 = "bfloat16", "float16", "float8_e4m3fn", "float32", "int32", "uint8", "int8"
FP8_FNUZ = "float8_e4m3fnuz"

ITEMSIZE = {BF16: 2, F16: 2, FP8: 1, FP8_FNUZ: 1, F32: 4, I32: 4, U8: 1, I8: 1}

# __cuda_array_interface__ typestr -> dtype.  The interface has no code for
# bfloat16 (it borrows NumPy's, which lacks it); exporters that carry bf16
# describe it as 2-byte raw data, "<V2", which is taken as bfloat16 here.
# fp8 data is carried as bytes ("|u1"), as vLLM's fp8 KV cache is.
_TYPESTR = {"<f2": F16, "<V2": BF16, "|V2": BF16, "<f4": F32, "<i4": I32, "|u1": U8, "|i1": I8, "|V1": U8}


class TensorView(NamedTuple):
    """The facts of one argument.  device: a GPU ordinal, "cpu", or None
    when the object does not say (__cuda_array_interface__ has no device
    field; an object with a .device attribute is asked)."""
    ptr: int
    dtype: str
    shape: Tuple[int, ...]
    strides: Optional[Tuple[int, ...]]  # in elements; None = row-major contiguous
    device: object
    nbytes: int

    @property
    def contiguous(self):
        return self.strides is None


class DeviceArray:
    """Device memory described by hand: a pointer, a shape, a dtype name
    ("bfloat16", "float16", "float8_e4m3fn", "float8_e4m3fnuz", "float32", "int32", "uint8"),
    optional strides in elements, and the GPU ordinal it lives on.  For
    memory that has no tensor object (mlt_device_alloc, another library)."""

    __slots__ = ("ptr", "shape", "dtype", "strides", "device")

    def __init__(self, ptr, shape, dtype, strides=None, device=None):
        if dtype not in ITEMSIZE:
            raise ValueError(f"DeviceArray: unknown dtype {dtype!r} (known: {', '.join(ITEMSIZE)})")
        self.ptr = int(ptr)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype
        self.strides = tuple(int(s) for s in strides) if strides is not None else None
        self.device = device

    @property
    def nbytes(self):
        return numel(self.shape) * ITEMSIZE[self.dtype]

    def __repr__(self):
        return f"DeviceArray(0x{self.ptr:x}, {self.shape}, {self.dtype!r}, device={self.device})"


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def contiguous_strides(shape):
    """Row-major strides in elements."""
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= s
    return tuple(reversed(strides))


def is_contiguous(shape, strides):
    """Row-major, ignoring the stride of any dimension of size 1 (it never
    moves the pointer), as torch does."""
    if strides is None:
        return True
    step = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s != 1 and st != step:
            return numel(shape) == 0
        step *= s
    return True


def torch_dtype_name(dtype):
    """torch.bfloat16 -> "bfloat16", without importing torch."""
    name = str(dtype)
    return name[6:] if name.startswith("torch.") else name


def is_torch_tensor(obj):
    return callable(getattr(obj, "data_ptr", None)) and callable(getattr(obj, "stride", None)) \
        and hasattr(obj, "dtype") and callable(getattr(obj, "get_device", None))


def _device_of(obj):
    """The GPU ordinal an object says it lives on, "cpu", or None."""
    dev = getattr(obj, "device", None)
    if dev is None:
        return None
    if isinstance(dev, int):
        return dev
    kind = getattr(dev, "type", None)          # torch.device
    if kind == "cpu":
        return "cpu"
    for attr in ("index", "id"):               # torch.device / cupy Device
        ordinal = getattr(dev, attr, None)
        if isinstance(ordinal, int):
            return ordinal
    return None


def describe(obj, name):
    """A TensorView of obj, or Error naming the argument when obj is not
    something the package can read."""
    if obj is None:
        raise Error(Status.ERR_INVALID_ARGUMENT, f"{name}: missing (None)")
    if isinstance(obj, DeviceArray):
        strides = obj.strides
        if strides is not None and is_contiguous(obj.shape, strides):
            strides = None
        return TensorView(obj.ptr, obj.dtype, obj.shape, strides, obj.device, obj.nbytes)
    # torch first when it is loaded (a torch tensor also has a
    # __cuda_array_interface__, which refuses bfloat16); then the interface;
    # then anything shaped like a torch tensor
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return _describe_torch(obj)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _describe_cai(obj, cai, name)
    if is_torch_tensor(obj):
        return _describe_torch(obj)
    raise Error(Status.ERR_INVALID_ARGUMENT,
                f"{name}: expected a torch tensor, an object with __cuda_array_interface__ or an "
                f"mlatune.DeviceArray, got {type(obj).__name__}")


def _describe_torch(obj):
    shape = tuple(obj.shape)
    strides = None if obj.is_contiguous() else tuple(obj.stride())
    dev = obj.get_device()
    return TensorView(obj.data_ptr(), torch_dtype_name(obj.dtype), shape, strides,
                      "cpu" if dev < 0 else dev, numel(shape) * obj.element_size())


def _describe_cai(obj, cai, name):
    try:
        ptr = int(cai["data"][0] or 0)
        shape = tuple(map(int, cai["shape"]))
        typestr = cai["typestr"]
    except (KeyError, TypeError, IndexError, ValueError) as e:
        raise Error(Status.ERR_INVALID_ARGUMENT, f"{name}: malformed __cuda_array_interface__ ({e!r})") from None
    if cai.get("mask") is not None:
        raise Error(Status.ERR_INVALID_ARGUMENT, f"{name}: masked arrays are not supported")
    dtype = _TYPESTR.get(typestr)
    if dtype is None:
        raise Error(Status.ERR_INVALID_ARGUMENT,
                    f"{name}: __cuda_array_interface__ typestr {typestr!r} is not a dtype the runtime reads "
                    f"(known: {', '.join(sorted(_TYPESTR))})")
    item = ITEMSIZE[dtype]
    strides = cai.get("strides")
    if strides is not None:
        if any(st % item for st in strides):
            raise Error(Status.ERR_INVALID_ARGUMENT,
                        f"{name}: strides {tuple(strides)} (bytes) are not multiples of the element size {item}")
        strides = tuple(int(st) // item for st in strides)
        if is_contiguous(shape, strides):
            strides = None
    return TensorView(ptr, dtype, shape, strides, _device_of(obj), numel(shape) * item)


def device_name(device):
    return "cpu" if device == "cpu" else f"cuda:{device}"
