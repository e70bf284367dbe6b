"""ctypes mirrors of the types in mlatune.h.

Every struct, enum and constant of the public header has its mirror here,
field for field and in the header's order.  tests/test_layout.py parses the
header, compiles a C program that prints sizeof and offsetof of every field
it finds, and compares the result with these classes: a field added to the C
side and not here (or a changed type) fails that test.

Nothing in this module loads the library: it is the shape of the ABI only.
"""

import ctypes
import enum
import struct

# the header's MLT_VERSION_MAJOR / MLT_VERSION_MINOR at the time these
# mirrors were last compared with it
HEADER_VERSION = (0, 3)

# The C API version from which mlt_decode_args has the views (q in two
# parts, strides for q / q_pe / out / lse) and the device-side kv scale.
# A library without mlt_api_version is 0.1.
VIEWS_VERSION = (0, 2)

# MLT_LENGTHS_UNKNOWN: seq_len_hint for a call whose lengths are not known on
# the host (CUDA-graph capture); the plan then runs a length-aware variant
LENGTHS_UNKNOWN = -1


class Status(enum.IntEnum):
    """mlt_status."""
    OK = 0
    ERR_INVALID_ARGUMENT = 1
    ERR_NO_BACKEND = 2
    ERR_NO_DEVICE = 3
    ERR_COMPILE = 4
    ERR_DATABASE = 5
    ERR_OUT_OF_MEMORY = 6
    ERR_LAUNCH = 7
    ERR_IO = 8
    ERR_INTERNAL = 9


class LogLevel(enum.IntEnum):
    """mlt_log_level."""
    QUIET = 0
    WARN = 1
    INFO = 2


class DType(enum.IntEnum):
    """mlt_dtype."""
    BF16 = 0
    FP16 = 1
    FP8_E4M3 = 2        # OCP e4m3 "fn" (bias 7)
    FP8_E4M3_FNUZ = 3   # e4m3 "fnuz" (bias 8, 0x80 NaN): gfx942's fp8


class ChoiceReason(enum.IntEnum):
    """mlt_choice_reason."""
    EXACT_KEY = 0
    NEAREST_KEY = 1
    HEURISTIC = 2


class PrefillForm(enum.IntEnum):
    """mlt_prefill_form: how a chunk of prefill runs (docs/prefill.md, "The
    crossover")."""
    MQA = 0             # absorbed: attention over the latent cache (mlt_plan_run)
    MHA = 1             # decompressed: k and v per head (mlt_prefill_run)


# C enums are ints on every ABI the runtime supports (x86-64, aarch64 Linux)
_c_enum = ctypes.c_int


class RuntimeOptions(ctypes.Structure):
    """mlt_runtime_options."""
    _fields_ = [
        ("device", ctypes.c_int),
        ("user_db", ctypes.c_char_p),
        ("system_db", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
        ("log_level", _c_enum),
    ]


class DecodeProblem(ctypes.Structure):
    """mlt_decode_problem."""
    _fields_ = [
        ("n_heads", ctypes.c_int),
        ("sq", ctypes.c_int),
        ("d", ctypes.c_int),
        ("dl", ctypes.c_int),
        ("page_size", ctypes.c_int),
        ("q_dtype", _c_enum),
        ("kv_dtype", _c_enum),
        ("softmax_scale", ctypes.c_float),
        ("kv_scale", ctypes.c_float),
        ("max_batch", ctypes.c_int),
        # 1: runs may pass views (q in two parts, strides, the kv scale in
        # device memory); 0: contiguous layouts only, kernels that do not
        # place rows through strides (faster on small shapes)
        ("views", ctypes.c_int),
    ]


class DecodeArgs(ctypes.Structure):
    """mlt_decode_args.  Pointers are kept as integers (c_void_p) so that
    filling the struct never builds a ctypes pointer object."""
    _fields_ = [
        ("batch", ctypes.c_int),
        ("seq_len_hint", ctypes.c_int),
        ("max_blocks_per_seq", ctypes.c_int),
        ("q", ctypes.c_void_p),
        ("kv_cache", ctypes.c_void_p),
        ("block_table", ctypes.c_void_p),
        ("seq_lens", ctypes.c_void_p),
        ("out", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),
        ("workspace", ctypes.c_void_p),
        ("workspace_size", ctypes.c_size_t),
        ("max_seq_len_hint", ctypes.c_int),
        ("schedule", ctypes.c_void_p),
        # 0.2: the views (all zero / NULL: the contiguous layouts) and the
        # device-side kv scale.  Strides in elements per (request, token,
        # head); all three 0 = contiguous.
        ("q_pe", ctypes.c_void_p),
        ("q_strides", ctypes.c_int64 * 3),
        ("q_pe_strides", ctypes.c_int64 * 3),
        ("out_strides", ctypes.c_int64 * 3),
        ("lse_strides", ctypes.c_int64 * 3),
        ("kv_scale_device", ctypes.c_void_p),
    ]


class ChoiceInfo(ctypes.Structure):
    """mlt_choice_info."""
    _fields_ = [
        ("reason", _c_enum),
        ("family", ctypes.c_char * 40),
        ("variant", ctypes.c_char * 200),
        ("key_batch", ctypes.c_int),
        ("key_seq_len", ctypes.c_int),
        ("distance", ctypes.c_double),
        ("measured_ms", ctypes.c_double),
        ("source", ctypes.c_char * 16),
        ("key_max_seq_len", ctypes.c_int),
        ("key_lengths", ctypes.c_char * 48),
        ("length_aware", ctypes.c_int),
        ("why", ctypes.c_char * 160),
    ]


class PrefillProblem(ctypes.Structure):
    """mlt_prefill_problem (mirrored and bound; the package has no prefill
    call of its own yet: Library.mlt_prefill_* take these)."""
    _fields_ = [
        ("n_heads", ctypes.c_int),
        ("qk_nope_dim", ctypes.c_int),
        ("qk_rope_dim", ctypes.c_int),
        ("v_dim", ctypes.c_int),
        ("q_dtype", _c_enum),
        ("kv_dtype", _c_enum),
        ("softmax_scale", ctypes.c_float),
        ("q_scale", ctypes.c_float),
        ("k_scale", ctypes.c_float),
        ("v_scale", ctypes.c_float),
    ]


class PrefillArgs(ctypes.Structure):
    """mlt_prefill_args.  Strides in elements per (token, head)."""
    _fields_ = [
        ("batch", ctypes.c_int),
        ("max_seqlen_q", ctypes.c_int),
        ("causal", ctypes.c_int),
        ("cu_seqlens_q", ctypes.c_void_p),
        ("cu_seqlens_k", ctypes.c_void_p),
        ("q", ctypes.c_void_p),
        ("k", ctypes.c_void_p),
        ("k_pe", ctypes.c_void_p),
        ("v", ctypes.c_void_p),
        ("out", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),
        ("q_strides", ctypes.c_int64 * 2),
        ("k_strides", ctypes.c_int64 * 2),
        ("v_strides", ctypes.c_int64 * 2),
        ("out_strides", ctypes.c_int64 * 2),
        ("lse_strides", ctypes.c_int64 * 2),
        ("k_pe_strides", ctypes.c_int64 * 2),
        ("max_seqlen_k", ctypes.c_int),
        ("workspace", ctypes.c_void_p),
        ("workspace_size", ctypes.c_size_t),
    ]


class PrefillMergeArgs(ctypes.Structure):
    """mlt_prefill_merge_args."""
    _fields_ = [
        ("tokens", ctypes.c_int),
        ("out_a", ctypes.c_void_p),
        ("lse_a", ctypes.c_void_p),
        ("out_b", ctypes.c_void_p),
        ("lse_b", ctypes.c_void_p),
        ("out", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),
        ("out_a_strides", ctypes.c_int64 * 2),
        ("lse_a_strides", ctypes.c_int64 * 2),
        ("out_b_strides", ctypes.c_int64 * 2),
        ("lse_b_strides", ctypes.c_int64 * 2),
        ("out_strides", ctypes.c_int64 * 2),
        ("lse_strides", ctypes.c_int64 * 2),
    ]


class FormInfo(ctypes.Structure):
    """mlt_form_info."""
    _fields_ = [
        ("form", _c_enum),
        ("measured", ctypes.c_int),
        ("source", ctypes.c_char * 16),
        ("key_compute_units", ctypes.c_int),
        ("key_n_heads", ctypes.c_int),
        ("key_context", ctypes.c_int),
        ("lo_sq", ctypes.c_int),
        ("hi_sq", ctypes.c_int),
        ("mqa_ms", ctypes.c_double),
        ("mha_ms", ctypes.c_double),
        ("boundary_sq", ctypes.c_int),
        ("why", ctypes.c_char * 256),
    ]


# the library's functions that are not always there: name -> (restype,
# argtypes, the API version that added it).  Library binds each when the
# library has it, else None.
_vp = ctypes.c_void_p
OPTIONAL_FUNCTIONS = {
    "mlt_api_version": (ctypes.c_int, [], (0, 2)),
    "mlt_runtime_record_calls": (ctypes.c_int, [_vp, ctypes.c_int], (0, 2)),
    "mlt_prefill_problem_default": (None, [ctypes.POINTER(PrefillProblem)], (0, 2)),
    "mlt_prefill_plan_create": (ctypes.c_int, [_vp, ctypes.POINTER(PrefillProblem), ctypes.POINTER(_vp)], (0, 2)),
    "mlt_prefill_plan_destroy": (None, [_vp], (0, 2)),
    "mlt_prefill_run": (ctypes.c_int, [_vp, ctypes.POINTER(PrefillArgs), _vp], (0, 2)),
    "mlt_prefill_merge": (ctypes.c_int, [_vp, ctypes.POINTER(PrefillMergeArgs), _vp], (0, 2)),
    "mlt_prefill_plan_explain": (ctypes.c_int, [_vp, ctypes.POINTER(ChoiceInfo)], (0, 2)),
    "mlt_prefill_plan_explain_call": (ctypes.c_int, [_vp, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                     ctypes.POINTER(ChoiceInfo)], (0, 2)),
    "mlt_prefill_workspace_size": (ctypes.c_size_t, [_vp, ctypes.c_int, ctypes.c_int], (0, 3)),
    "mlt_prefill_choose_form": (ctypes.c_int, [_vp, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                               ctypes.c_int, ctypes.POINTER(FormInfo)], (0, 3)),
}


def decode_version(value):
    """mlt_api_version()'s (major << 16) | minor as (major, minor)."""
    return value >> 16, value & 0xFFFF


# C name -> mirror, for the layout test and for messages
STRUCTS = {
    "mlt_runtime_options": RuntimeOptions,
    "mlt_decode_problem": DecodeProblem,
    "mlt_decode_args": DecodeArgs,
    "mlt_choice_info": ChoiceInfo,
    "mlt_prefill_problem": PrefillProblem,
    "mlt_prefill_args": PrefillArgs,
    "mlt_prefill_merge_args": PrefillMergeArgs,
    "mlt_form_info": FormInfo,
}

# C enum name -> (mirror, prefix of the C enumerators)
ENUMS = {
    "mlt_status": (Status, "MLT_"),
    "mlt_log_level": (LogLevel, "MLT_LOG_"),
    "mlt_dtype": (DType, "MLT_"),
    "mlt_choice_reason": (ChoiceReason, "MLT_CHOICE_"),
    "mlt_prefill_form": (PrefillForm, "MLT_FORM_"),
}

# C macro -> value
CONSTANTS = {
    "MLT_LENGTHS_UNKNOWN": LENGTHS_UNKNOWN,
    "MLT_VERSION_MAJOR": HEADER_VERSION[0],
    "MLT_VERSION_MINOR": HEADER_VERSION[1],
}


def struct_packer(mirror, count=None):
    """A struct.Struct that writes every field of a ctypes mirror in one
    call (pack_into), laid out from the mirror's own offsets so that the two
    cannot disagree.  Filling mlt_decode_args this way costs one call instead
    of one ctypes attribute store per field; it is the per-call fast path.
    An array field (int64_t x[3]) takes its elements as separate values.
    count: pack only the first `count` fields (the block then ends where
    the next field starts), for a caller that appends the rest as bytes."""
    fields = mirror._fields_ if count is None else mirror._fields_[:count]
    end = ctypes.sizeof(mirror) if count is None or count >= len(mirror._fields_) \
        else getattr(mirror, mirror._fields_[count][0]).offset
    codes = {
        ctypes.c_int: "i",
        ctypes.c_float: "f",
        ctypes.c_double: "d",
        ctypes.c_int64: "q",
        ctypes.c_void_p: "Q" if ctypes.sizeof(ctypes.c_void_p) == 8 else "I",
        ctypes.c_size_t: "Q" if ctypes.sizeof(ctypes.c_size_t) == 8 else "I",
    }
    fmt = "="  # native byte order, no implicit alignment: padding comes from the offsets
    at = 0
    for name, ctype in fields:
        field = getattr(mirror, name)
        count = 1
        if issubclass(ctype, ctypes.Array):
            ctype, count = ctype._type_, ctype._length_
        if ctype not in codes:
            raise TypeError(f"struct_packer: field {name} of {mirror.__name__} has no packing code")
        if field.offset > at:
            fmt += f"{field.offset - at}x"
        fmt += (f"{count}" if count > 1 else "") + codes[ctype]
        at = field.offset + field.size
    if end > at:
        fmt += f"{end - at}x"
    packer = struct.Struct(fmt)
    if packer.size != end:
        raise AssertionError(f"struct_packer: {fmt} is {packer.size} bytes, {mirror.__name__} {end}")
    return packer
