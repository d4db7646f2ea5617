"""Handoff stages between the GL render target and an encoder.

``convert`` turns RGBA into planar YUV on the GPU; ``readback`` brings planes to
host memory (any GL driver); the CUDA handoffs keep them on the GPU (NVIDIA).
"""

from .convert import Converter, PlaneLayout
from .readback import HostReadback
from .target import RenderTarget, TargetRing

__all__ = ["Converter", "HostReadback", "PlaneLayout", "RenderTarget", "TargetRing"]
