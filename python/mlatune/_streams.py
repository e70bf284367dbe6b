"""Which stream a call is launched on.

  stream=None, torch tensors: torch's current stream on the runtime's
      device - what any torch op of the same code would use, and the capture
      stream inside torch.cuda.graph();
  stream=None, other tensors: NULL, the legacy default stream;
  stream=an int: that CUstream / hipStream_t handle (0 = NULL);
  stream=an object with .cuda_stream (torch.cuda.Stream) or .ptr (CuPy's
      Stream): its handle.

__cuda_array_interface__'s "stream" key (version 3) is not followed: it
asks the consumer to synchronise with the producer, and these calls never
synchronise.
"""

import sys

from ._capi import Status
from ._errors import Error


class TorchStreams:
    """torch's current stream as a raw handle, fast: torch._C's
    _cuda_getCurrentRawStream (what torch's own compiler calls) when this
    torch has it, else torch.cuda.current_stream().cuda_stream."""

    def __init__(self):
        torch = sys.modules["torch"]
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            self.current = raw
        else:
            current_stream = torch.cuda.current_stream
            self.current = lambda device: current_stream(device).cuda_stream


def stream_handle(stream):
    """The integer handle of an explicit stream argument."""
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h
    raise Error(Status.ERR_INVALID_ARGUMENT,
                f"stream: expected an int handle or an object with .cuda_stream, got {type(stream).__name__}")
