"""Convert stage: the RGBA render target becomes what the encoder reads, on the GPU, rows top-down.

:class:`Converter` makes YUV planes (NV12, I420, YUV444; BT.709/601, limited or
full range); :class:`RgbPacker` makes packed RGB for encoders that convert
themselves (nvJPEG, NVENC's ABGR input). Both are :class:`ConvertStage`\\ s.
"""

from ..layout import PACKED_RGB, PlaneLayout
from .pack import RgbPacker
from .stage import ConvertStage
from .yuv import Converter

__all__ = ["PACKED_RGB", "ConvertStage", "Converter", "PlaneLayout", "RgbPacker"]
