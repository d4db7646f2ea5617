"""Module paths from before the platform packages and the rooms (glrec.gl, glrec.cuda, the encoders' and
sources' folders) keep importing, with a warning.

``import glrec.leaks`` or ``from glrec.interop.pool import DeviceFrame`` in a user's
program finds the module at its new home (``glrec.gl.leaks``, ``glrec.cuda.pool``)
and warns once with the new path; the module object is the same, so patches and
``isinstance`` checks see one module.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

#: Old dotted path -> where the module lives now.
MOVED: dict[str, str] = {
    "glrec.context": "glrec.gl.context",
    "glrec.egl": "glrec.gl.egl",
    "glrec.osmesa": "glrec.gl.osmesa",
    "glrec.borrowed": "glrec.gl.borrowed",
    "glrec.devices": "glrec.gl.devices",
    "glrec.glstate": "glrec.gl.state",
    "glrec.glsl": "glrec.gl.glsl",
    "glrec.leaks": "glrec.gl.leaks",
    "glrec.target": "glrec.gl.target",
    "glrec.interop.cuda": "glrec.cuda.driver",
    "glrec.interop.vmm": "glrec.cuda.vmm",
    "glrec.interop.dlpack": "glrec.cuda.dlpack",
    "glrec.interop.pool": "glrec.cuda.pool",
    "glrec.capture": "glrec.sources.capture",
    "glrec.inputs": "glrec.events",
    "glrec.sources.inputs": "glrec.sources.video.media",
    "glrec.gym_mujoco": "glrec.gym.mujoco",
    "glrec.convert.layout": "glrec.layout",
    "glrec.sinks.timing": "glrec.sinks.frame_times",
    "glrec.sources.pack": "glrec.sources.frames.to_uint8",
    # issue 31: each encoder in a room of its own (glrec.encoders.cpu, .nvenc, .nvjpeg and .gl_jpeg are
    # packages now, whose faces hand on the old modules' public names)
    "glrec.encoders.cpu_limits": "glrec.encoders.cpu.limits",
    "glrec.encoders.cpu_options": "glrec.encoders.cpu.options",
    "glrec.encoders.nvenc_api": "glrec.encoders.nvenc.api",
    "glrec.encoders.nvenc_colour": "glrec.encoders.nvenc.colour",
    "glrec.encoders.nvenc_options": "glrec.encoders.nvenc.options",
    "glrec.encoders.nvenc_probe": "glrec.encoders.nvenc.probe",
    "glrec.encoders.vui": "glrec.encoders.nvenc.vui",
    "glrec.encoders.gl_jpeg_tables": "glrec.encoders.gl_jpeg.tables",
    "glrec.encoders.gl_jpeg_pipeline": "glrec.encoders.gl_jpeg.slots",
    "glrec.encoders.gl_jpeg_geometry": "glrec.encoders.gl_jpeg.blocks",
    # issue 31: sources in two rooms, written frames and video input (glrec.sources.frames and
    # glrec.sources.video are packages now, whose faces hand on the old modules' public names)
    "glrec.sources.array": "glrec.sources.frames.array",
    "glrec.sources.cuda_array": "glrec.sources.frames.cuda_array",
    "glrec.sources.direct": "glrec.sources.frames.direct",
    "glrec.sources.to_uint8": "glrec.sources.frames.to_uint8",
    "glrec.sources.unpack": "glrec.sources.frames.unpack",
    "glrec.sources.writer": "glrec.sources.frames.writer",
    "glrec.sources.audio": "glrec.sources.video.audio",
    "glrec.sources.decode": "glrec.sources.video.decode",
    "glrec.sources.formats": "glrec.sources.video.formats",
    "glrec.sources.media": "glrec.sources.video.media",
    "glrec.sources.nvdec": "glrec.sources.video.nvdec",
    "glrec.sources.nvdec_gl": "glrec.sources.video.nvdec_gl",
    "glrec.sources.nvdec_layout": "glrec.sources.video.nvdec_layout",
    "glrec.sources.rgb": "glrec.sources.video.rgb",
    "glrec.sources.timeline": "glrec.sources.video.timeline",
    "glrec.sources.upload": "glrec.sources.video.upload",
    # issue 31: the module of the front door's transcode verb is private; glrec.transcode is the verb
    "glrec.transcode": "glrec._transcode",
    # issue 33: the dataset room in sub-packages (spec, rendering, files, streaming; glrec.dataset.spec is the
    # spec package now, whose face hands on the document's public names)
    "glrec.dataset.params": "glrec.dataset.spec.params",
    "glrec.dataset.render": "glrec.dataset.rendering.sample",
    "glrec.dataset.gpu_pack": "glrec.dataset.rendering.pack",
    "glrec.dataset.batches": "glrec.dataset.rendering.batches",
    "glrec.dataset.batch_cuda": "glrec.dataset.rendering.cuda",
    "glrec.dataset.batch_memory": "glrec.dataset.rendering.memory",
    "glrec.dataset.devices": "glrec.dataset.rendering.devices",
    "glrec.dataset.encode": "glrec.dataset.files.encode",
    "glrec.dataset.png": "glrec.encoders.png.writer",
    "glrec.dataset.files.png": "glrec.encoders.png.writer",  # one PNG writer for shards and .png sequences
    "glrec.dataset.writers": "glrec.dataset.files.writers",
    "glrec.dataset.nvjpeg_colour": "glrec.dataset.files.nvjpeg_colour",
    "glrec.dataset.gl_jpeg_colour": "glrec.dataset.files.gl_jpeg_colour",
    "glrec.dataset.folder": "glrec.dataset.files.folder",
    "glrec.dataset.lock": "glrec.dataset.files.lock",
    "glrec.dataset.runner": "glrec.dataset.files.runner",
    "glrec.dataset.local": "glrec.dataset.files.local",
    "glrec.dataset.ray_backend": "glrec.dataset.files.ray_backend",
    "glrec.dataset.preview": "glrec.dataset.files.preview",
    "glrec.dataset.tensors": "glrec.dataset.streaming.tensors",
    "glrec.dataset.torch_data": "glrec.dataset.streaming.torch_data",
}

#: Old module paths that are front-door verbs now (``glrec.transcode``): importing the old path makes
#: Python set ``glrec.transcode`` to the module, so the module calls the verb when called, and
#: ``glrec.transcode(...)`` keeps working in a program that also imports the old path.
VERBS: dict[str, str] = {"glrec.transcode": "transcode"}


class _VerbModule(ModuleType):
    """A module that is also its verb: calling it calls the function of :data:`VERBS` it holds."""

    __verb__: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(self, self.__verb__)(*args, **kwargs)


class _Loader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        if spec.name in VERBS:
            text = f"{spec.name} is the function itself now (its module is {self.new}): call {spec.name}(...)."
        else:
            text = f"{spec.name} moved to {self.new}; import it from there."
        warnings.warn(text, DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.new)
        if spec.name in VERBS:
            module.__class__ = _VerbModule
            vars(module)["__verb__"] = VERBS[spec.name]
        sys.modules[spec.name] = module
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The module at its new path is already executed."""


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, name: str, path: Sequence[str] | None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(name)
        return None if new is None else importlib.machinery.ModuleSpec(name, _Loader(new))


def install() -> None:
    """Add the finder once (``import glrec`` does this)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
