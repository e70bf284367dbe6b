"""The layout of a plan's last torch call, remembered: run()'s checks made
once per layout instead of once per call.

Everything run()'s checks decide (dtype, shape, device, contiguity and the
view strides of each tensor; the batch, max_blocks_per_seq and the
workspace's size) is a function of a few facts of each tensor: its shape,
dtype, device and strides - its layout.  An engine calls a plan with the
same layouts over and over (every layer of a step, every step of the same
batch); only the data pointers change.  So run() reads the layouts of its
tensors and, when they equal those of the last call that passed the
checks, takes that call's answer: the same facts give the same answer,
whatever tensor objects carry them.  The data pointers are read afresh and
their alignment tested in every call.  Nothing is remembered about an
object, so nothing goes stale: a tensor resized, re-strided, retyped, moved
or given other storage in place (resize_, as_strided_, set_, `.data =`)
reads differently, is checked again in full, and is refused naming it when
it is wrong.  (torch's `_version` is no help here: resize_ and `.data =`
leave it as it was, and every in-place write changes it.)

Two ways to read the layouts:

  - torch's tensor guards (torch._C._dynamo.guards.TensorGuards, what
    torch.compile checks before running compiled code: each tensor's Python
    type, dispatch keys (the device type), dtype, device index,
    requires_grad, sizes and strides) compare every tensor of the call in
    one C call, where this torch has them and they pass a self-test
    (_tensor_guards());
  - otherwise, and for torch-shaped objects that are not torch tensors, in
    Python: shape, dtype, get_device() and is_contiguous() (or stride() when
    not contiguous) of each tensor.  That reads what the checks of the
    commonest call (torch tensors, contiguous, q whole: torch_pointers) read,
    so without guards run() remembers only the other forms (vLLM's pair,
    views, a kv scale tensor), whose checks cost more.

One layout per plan is kept (a new one replaces it): a plan serves one Sq,
and an engine's batch changes once per step, not per call.
"""

import sys

_UNSET = object()
_tensor_guards_factory = _UNSET


def read_layouts(tensors):
    """The layouts of tensors in Python: what the checks read, nothing
    more.  Raises AttributeError for an object that is not torch-shaped."""
    key = ()
    for t in tensors:
        key += (t.shape, t.dtype, t.get_device(), t.is_contiguous() or t.stride())
    return key


def _tensor_guards():
    """A function making torch's TensorGuards over a tuple of tensors, or
    None when this torch has none, takes other arguments, or fails the
    self-test: a guard made on one tensor must accept a tensor of the same
    layout and refuse each change of shape, rank, dtype and strides.  Run
    once per process, on CPU tensors (no GPU memory: the first call may be
    under graph capture)."""
    torch = sys.modules.get("torch")
    try:
        guards_class = torch._C._dynamo.guards.TensorGuards
    except AttributeError:
        return None

    def make(tensors):  # torch 2.1 on: no dynamic dimension (None) checks every size and stride
        return guards_class(*tensors, dynamic_dims_sizes=None, dynamic_dims_strides=None)

    def make_2_0(tensors):  # torch 2.0
        return guards_class(*tensors, dynamic_shapes=False)

    for maker in (make, make_2_0):
        try:
            guard = maker((torch.zeros((2, 3)),))
            changed = (torch.zeros((3, 2)), torch.zeros((2, 3, 1)), torch.zeros((2, 3), dtype=torch.int32),
                       torch.zeros((3, 2)).t(), torch.zeros((2, 4))[:, :3])
            if guard.check(torch.ones((2, 3))) is True and all(guard.check(t) is False for t in changed):
                return maker
        except Exception:  # another signature: the next, else the Python reads
            pass
    return None


def tensor_guards():
    """_tensor_guards(), worked out once (torch must be loaded)."""
    global _tensor_guards_factory
    if _tensor_guards_factory is _UNSET:
        _tensor_guards_factory = _tensor_guards()
    return _tensor_guards_factory


class LastLayout:
    """What a plan remembers of its last checked torch call.

    form:   which optional arguments were given and lse_layout (the tuple
            of tensors is built from them, so it comes first)
    guard:  a TensorGuards over that call's tensors, or None
    check:  guard.check (bound once: run() calls it), or None
    key:    read_layouts() of them (when guard is None)
    answer: what run() needs besides the pointers (plan.py's _remember:
            batch, max_blocks_per_seq, workspace bytes, the view strides
            packed or None, the stream getter)
    """
    __slots__ = ("form", "guard", "check", "key", "answer")

    def __init__(self, form, guard, key, answer):
        self.form, self.guard, self.key, self.answer = form, guard, key, answer
        self.check = guard.check if guard is not None else None

    def match(self, tensors):
        """True when tensors have the layouts this answer was checked on;
        else their read_layouts() when they were read in Python (for
        remember(), so that a call of new layouts reads them once), or
        None."""
        if self.guard is not None:
            try:
                return self.guard.check(*tensors) or None
            except TypeError:  # not all torch tensors
                return None
        try:
            key = read_layouts(tensors)
        except AttributeError:  # not torch-shaped
            return None
        return True if key == self.key else key


def remember(tensors, form, answer, make_guard, key=None):
    """A LastLayout for tensors that just passed the checks, or None when
    their layouts cannot be read (not torch-shaped).  key: their
    read_layouts(), when match() read them already."""
    if make_guard is not None:
        try:
            return LastLayout(form, make_guard(tensors), None, answer)
        except Exception:  # not all torch tensors: read them in Python
            pass
    try:
        return LastLayout(form, None, key if key is not None else read_layouts(tensors), answer)
    except AttributeError:
        return None
