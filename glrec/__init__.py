"""glrec: render OpenGL scenes headless and record them to video.

>>> import glrec
>>> glrec.record("cube", "cube.mp4", size=(1280, 720), fps=30, seconds=3)  # doctest: +SKIP
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
from .result import RecordResult, record
from .scenes import Scene, load_scene
from .sources import VideoSource

__version__ = "0.1.0"

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
]
