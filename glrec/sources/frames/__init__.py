"""Frames written in (``Recorder.write``): checked, then uploaded, copied on the device, or handed to the encoder.

:mod:`.written` checks what comes (numpy, PIL, matplotlib, CUDA arrays); host
arrays are uploaded by :mod:`.array` (a ring of pixel-unpack buffers) or,
where GL is software, handed to the CPU encoder by :mod:`.direct`; CUDA arrays
are copied on the device by :mod:`.cuda_array` and unpacked into the target by
:mod:`.unpack`. :class:`~.writer.FrameWriter` picks the source for each frame.
"""

from .written import (
    CUDA_DTYPES,
    FLOAT_TOLERANCE,
    HOST_DTYPES,
    CudaFrameIn,
    FrameIn,
    HostFrameIn,
    check_float_range,
    inspect_frame,
)

__all__ = ["CUDA_DTYPES", "FLOAT_TOLERANCE", "HOST_DTYPES", "CudaFrameIn", "FrameIn", "HostFrameIn",
           "check_float_range", "inspect_frame"]  # fmt: skip
