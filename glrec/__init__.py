"""glrec: render OpenGL scenes headless and record them to video.

>>> import glrec
>>> glrec.record("cube", "cube.mp4", size=(1280, 720), fps=30, seconds=3)  # doctest: +SKIP
>>> glrec.write_video("frames.mp4", frames, fps=30)  # numpy / PIL / CUDA frames  # doctest: +SKIP
"""

from .errors import (
    ConfigError,
    ContextError,
    ContextThreadError,
    CudaError,
    DatasetError,
    DeviceError,
    DiskFullError,
    EncoderError,
    EncoderUnavailableError,
    GlrecError,
    InputError,
    InputNotFoundError,
    InputTimeoutError,
    OutputError,
    OutputExistsError,
    SceneError,
    ShaderError,
    UnsupportedInputError,
)
from .recorder import Recorder
from .result import RecordResult, record, write_video
from .scenes import Scene, load_scene
from .sources import VideoSource

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # glrec.gym needs Gymnasium, an optional extra: imported on first use, not with glrec.
    if name == "gym":
        import importlib

        return importlib.import_module(".gym", __name__)
    raise AttributeError(f"module 'glrec' has no attribute {name!r}")


__all__ = [
    "ConfigError",
    "ContextError",
    "ContextThreadError",
    "CudaError",
    "DatasetError",
    "DeviceError",
    "DiskFullError",
    "EncoderError",
    "EncoderUnavailableError",
    "GlrecError",
    "InputError",
    "InputNotFoundError",
    "InputTimeoutError",
    "OutputError",
    "OutputExistsError",
    "RecordResult",
    "Recorder",
    "Scene",
    "SceneError",
    "ShaderError",
    "UnsupportedInputError",
    "VideoSource",
    "__version__",
    "load_scene",
    "record",
    "write_video",
]
