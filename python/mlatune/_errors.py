"""The exceptions the package raises."""

from ._capi import Status


class Error(Exception):
    """A failure of the runtime, or an argument the package refused before
    calling it.

    status:  the mlt_status (mlatune.Status) the C call returned, or
             Status.ERR_INVALID_ARGUMENT for an argument refused here (the
             C side would have refused it with the same status)
    message: what is wrong: mlt_last_error() for a C failure, or a message
             naming the argument ("q: expected dtype bfloat16, got float16")
    """

    def __init__(self, status, message):
        self.status = Status(status) if status is not None else None
        self.message = message
        super().__init__(f"{message} [{self.status.name}]" if self.status is not None else message)


class Unsupported(Error, NotImplementedError):
    """A form of call this libmlatune cannot take yet (for example q given as
    the pair (ql_nope, q_pe) before the C API has fields for it).  It is an
    Error with status ERR_INVALID_ARGUMENT, and a NotImplementedError, so an
    engine may fall back to another backend on either."""

    def __init__(self, message):
        super().__init__(Status.ERR_INVALID_ARGUMENT, message)


class LibraryNotFound(Error, OSError):
    """libmlatune could not be loaded.  .tried lists (path, reason) for every
    place looked at, in order; the message names them all."""

    def __init__(self, tried):
        self.tried = list(tried)
        lines = "\n".join(f"  {path}: {why}" for path, why in self.tried)
        super().__init__(
            None,
            "libmlatune not found; looked for:\n" + lines +
            "\nSet MLATUNE_LIBRARY to the library's path (for example build/libmlatune.so), "
            "or install it beside the package (cmake --install; see python/README.md).")
