"""mlatune: the mla-tune runtime (libmlatune) from Python, over ctypes.

    import mlatune
    rt = mlatune.Runtime(device=0)
    plan = rt.plan(16, page_size=64, q_dtype="bfloat16", kv_dtype="bfloat16",
                   softmax_scale=576 ** -0.5, max_batch=128)
    workspace = torch.empty(plan.workspace_size, dtype=torch.uint8, device="cuda")
    plan.run(q, kv_cache, block_table, seq_lens, out, lse, workspace)

Pure Python: importing it needs neither torch nor the library; the library
is loaded by the first Runtime (see load_library for where it is looked
for).  python/README.md has the rules for arguments and CUDA graphs.
"""

from ._capi import HEADER_VERSION, LENGTHS_UNKNOWN, VIEWS_VERSION, ChoiceReason, DType, LogLevel, PrefillForm, Status
from ._errors import Error, LibraryNotFound, Unsupported
from ._library import INSTALLED_PATH, SPLIT_Q_VERSION, Library, load_library
from ._tensors import DeviceArray
from .plan import Choice, Plan, Problem
from .runtime import FormChoice, Runtime, as_dtype

# the header's name for it
MLT_LENGTHS_UNKNOWN = LENGTHS_UNKNOWN

__version__ = "0.2.0"

__all__ = [
    "Choice", "ChoiceReason", "DType", "DeviceArray", "Error", "FormChoice", "HEADER_VERSION", "INSTALLED_PATH",
    "LENGTHS_UNKNOWN", "Library", "LibraryNotFound", "LogLevel", "MLT_LENGTHS_UNKNOWN", "Plan", "PrefillForm",
    "Problem", "Runtime", "SPLIT_Q_VERSION", "Status", "Unsupported", "VIEWS_VERSION", "as_dtype", "load_library",
]
