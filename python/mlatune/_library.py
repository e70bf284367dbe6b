"""Finding and loading libmlatune, and declaring the C functions' types.

Where the library is looked for, in order (the first that loads is used):

  1. the path given to load_library() / Runtime(library=...);
  2. $MLATUNE_LIBRARY (a path; when it is set and fails, nothing else is
     tried: a wrong explicit setting must not silently load another copy);
  3. the installed layout: ``cmake --install`` puts the package in
     <prefix>/<libdir>/python/mlatune/ and the library in <prefix>/<libdir>/,
     so it is ../../libmlatune.so.0 from this package's folder (the install
     writes _install_paths.py with the relative path when the package goes
     elsewhere: MLATUNE_PYTHON_INSTALL_DIR);
  4. the dynamic loader's own search (LD_LIBRARY_PATH, the ld.so cache,
     the system folders): "libmlatune.so.0", then ctypes.util.find_library.

Nothing is loaded at import: `import mlatune` works on a machine without the
library, and the first Runtime (or load_library()) raises LibraryNotFound
naming every place tried.
"""

import ctypes
import ctypes.util
import os
import threading

from ._capi import (HEADER_VERSION, OPTIONAL_FUNCTIONS, VIEWS_VERSION, ChoiceInfo, DecodeProblem, RuntimeOptions,
                    decode_version)
from ._errors import LibraryNotFound

SONAME = "libmlatune.so.0"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
try:
    # written by cmake --install (python/CMakeLists.txt): the library's
    # folder relative to the installed package, whatever the two
    # destinations are
    from ._install_paths import LIBRARY_DIR_FROM_PACKAGE
except ImportError:
    LIBRARY_DIR_FROM_PACKAGE = os.path.join(os.pardir, os.pardir)  # <libdir>/python/mlatune -> <libdir>
INSTALLED_PATH = os.path.normpath(os.path.join(_PACKAGE_DIR, LIBRARY_DIR_FROM_PACKAGE, SONAME))

# The version from which the C API takes q as two pointers (no-rope, rope
# parts), strides for q / out / lse and the kv scale in device memory; a
# library older than that is driven in the contiguous form only (the new
# forms raise mlatune.Unsupported).
SPLIT_Q_VERSION = VIEWS_VERSION

_vp = ctypes.c_void_p
_int = ctypes.c_int

# name: (restype, argtypes).  Handles and device pointers travel as plain
# integers (c_void_p); mlt_plan_run and mlt_plan_schedule take their
# mlt_decode_args as a bytes object packed per call (plan.py says why).
_FUNCTIONS = {
    "mlt_status_string": (ctypes.c_char_p, [_int]),
    "mlt_last_error": (ctypes.c_char_p, []),
    "mlt_runtime_options_default": (None, [ctypes.POINTER(RuntimeOptions)]),
    "mlt_runtime_create": (_int, [ctypes.POINTER(RuntimeOptions), ctypes.POINTER(_vp)]),
    "mlt_runtime_destroy": (None, [_vp]),
    "mlt_runtime_bind_thread": (_int, [_vp]),
    "mlt_runtime_arch": (ctypes.c_char_p, [_vp]),
    "mlt_device_alloc": (_int, [_vp, ctypes.c_size_t, ctypes.POINTER(_vp)]),
    "mlt_device_free": (_int, [_vp, _vp]),
    "mlt_copy_to_device": (_int, [_vp, _vp, _vp, ctypes.c_size_t]),
    "mlt_copy_to_host": (_int, [_vp, _vp, _vp, ctypes.c_size_t]),
    "mlt_synchronize": (_int, [_vp]),
    "mlt_plan_create": (_int, [_vp, ctypes.POINTER(DecodeProblem), ctypes.POINTER(_vp)]),
    "mlt_plan_destroy": (None, [_vp]),
    "mlt_plan_workspace_size": (ctypes.c_size_t, [_vp]),
    "mlt_plan_schedule_size": (ctypes.c_size_t, [_vp]),
    "mlt_plan_run": (_int, [_vp, _vp, _vp]),
    "mlt_plan_schedule": (_int, [_vp, _vp, _vp, _vp]),
    "mlt_plan_explain": (_int, [_vp, _int, _int, _int, ctypes.POINTER(ChoiceInfo)]),
}


class Library:
    """One loaded libmlatune: its path, its functions with their C types,
    and what its C API offers."""

    def __init__(self, path):
        self.path = path
        # ctypes.CDLL releases the GIL during each call: plan creation
        # compiles kernels, and other Python threads keep running meanwhile
        self._cdll = ctypes.CDLL(path)  # raises OSError when it does not load
        for name, (restype, argtypes) in _FUNCTIONS.items():
            try:
                fn = getattr(self._cdll, name)
            except AttributeError:
                raise OSError(f"{path} lacks {name}: not a libmlatune, or an incompatible one") from None
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)
        # mlt_api_version came with 0.2: a library without it is 0.1
        for name, (restype, argtypes, _since) in OPTIONAL_FUNCTIONS.items():
            fn = getattr(self._cdll, name, None)
            if fn is not None:
                fn.restype = restype
                fn.argtypes = argtypes
            setattr(self, name, fn)
        self.version = decode_version(self.mlt_api_version()) if self.mlt_api_version else (0, 1)
        # mlt_decode_args grows at its end from one version to the next (the
        # header: a program built against 0.1 must be rebuilt for 0.2): a
        # newer library would read fields past the block this package packs
        if self.version > HEADER_VERSION:
            raise OSError(f"{path} has C API {self.version[0]}.{self.version[1]}, newer than this mlatune "
                          f"package's mirrors ({HEADER_VERSION[0]}.{HEADER_VERSION[1]}): its mlt_decode_args "
                          f"may have fields the package does not fill; update the package")

    @property
    def supports_views(self):
        """Whether this library takes the views of mlt_decode_args (C API
        0.2): q as (ql_nope, q_pe), strided q / out / lse, and the kv scale
        in device memory."""
        return self.version >= VIEWS_VERSION

    # the name this property had first (the pair form alone)
    supports_split_q = supports_views

    def last_error(self):
        """The calling thread's message for its last failure."""
        msg = self.mlt_last_error()
        return msg.decode("utf-8", "replace") if msg else ""

    def status_string(self, status):
        s = self.mlt_status_string(int(status))
        return s.decode() if s else "unknown status"

    def __repr__(self):
        return f"<mlatune.Library {self.path} (API {self.version[0]}.{self.version[1]})>"


_loaded = {}
_lock = threading.Lock()


def _candidates(path):
    """(what to dlopen, whether it was asked for explicitly) in search order."""
    if path is not None:
        return [(os.fspath(path), True)]
    env = os.environ.get("MLATUNE_LIBRARY")
    if env:
        return [(env, True)]
    found = ctypes.util.find_library("mlatune")
    names = [INSTALLED_PATH, SONAME] + ([found] if found and found != SONAME else [])
    return [(n, False) for n in names]


def load_library(path=None):
    """Loads libmlatune (see the module's docstring for where it looks) and
    returns the Library; the same path loads once per process.  Raises
    LibraryNotFound naming every path tried and why each failed."""
    tried = []
    for name, explicit in _candidates(path):
        with _lock:
            lib = _loaded.get(name)
            if lib is not None:
                return lib
            if not explicit and os.sep in name and not os.path.exists(name):
                tried.append((name, "no such file"))
                continue
            try:
                lib = Library(name)
            except OSError as e:
                tried.append((name, str(e).replace(name + ": ", "")))
                continue
            _loaded[name] = lib
            return lib
    if path is None and os.environ.get("MLATUNE_LIBRARY"):
        tried[-1] = (tried[-1][0], tried[-1][1] + " (from MLATUNE_LIBRARY)")
    raise LibraryNotFound(tried)
