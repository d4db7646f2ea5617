"""What a scene may offer beyond :class:`~glrec.scenes.base.Scene`, as typed protocols.

Each capability is one small protocol, checked with ``isinstance`` (they are
``runtime_checkable``), so a feature asks "is this scene Randomisable?" in one
place instead of probing attributes with ``getattr``:

- :class:`WritesPasses`: lists the ground-truth passes it writes (``passes``); a
  scene without it writes colour only.
- :class:`Randomisable`: takes a dataset spec's ``[params]``: ``parameters``
  (name -> default, optional) and ``randomise(params, rng)``.
- :class:`BatchRandomisable`: lays out a whole batch of samples at once,
  ``randomise_batch(params, seeds)`` (one layout per sample, a pure function of
  that sample's parameters and seed) and ``use_layout(layout)`` (the one
  ``render`` draws next). The dataset renderer then draws every sample's
  parameters and layout for a batch with vectorised numpy; a scene without it
  goes through ``randomise`` one sample at a time. A subclass that overrides
  ``randomise`` but not ``randomise_batch`` is taken one sample at a time too
  (:func:`batch_randomisable`).
- :class:`BatchDrawable`: ``render_batch(target, layouts, times)`` clears a bound
  :class:`~glrec.scenes.layers.LayeredGBuffer` and draws sample j (one of its
  ``randomise_batch`` layouts, at ``times[j]``) into layer j, all samples in one
  pass (the vertex shader writes ``gl_Layer``). The dataset renderer and the
  training stream then render a chunk of samples per GL pass with one fence;
  a scene without it is rendered one sample at a time.
- :class:`BatchPrepared`: ``render_batch`` in two halves, ``prepare_batch(layouts, times)`` (the CPU
  work, no GL: it is called on the dataset renderer's planning thread, beside the draw of the batch
  before) and ``render_prepared(target, prepared)`` (the GL calls). The render thread then only issues
  GL commands and waits for the GPU (:func:`batch_prepared` says when a scene's halves are used).
- :class:`DepthMarksDrawn`: ``depth_marks_drawn = True`` says every fragment its batch draw writes passes
  a depth test that writes depth, and writes every pass it lists. The layered G-buffer then clears only
  colour and depth before a chunk (on the H200 clearing every target took more GPU time than the draw):
  the packer and the box pass read the other passes where depth was written and the cleared value
  (0) elsewhere, so the bytes are those of a full clear (:func:`marks_drawn`).
- :class:`ReportsParams`: ``params``, the values in effect after ``randomise`` (its
  defaults and what it drew), merged under the spec's values in ``meta.json``.
- :class:`LayoutParams`: ``layout_params(layout)``, the ``params`` in effect after
  ``use_layout(layout)``, read without using it (a pure function, any thread: the mapping is only
  read). The training stream then keeps each sample's layout for its metadata instead of switching
  the scene to it and copying its params on the render thread (:func:`layout_params_agree`).
- :class:`Classified`: names its class ids (``classes``).
- :class:`Annotated`: ``annotations(t)`` returns JSON-ready ``camera`` and ``objects``.
- :class:`BatchAnnotated`: ``annotations_batch(layouts, times)``, the annotations of a whole
  batch (sample j: ``layouts[j]`` at ``times[j]``) at once, each equal to what ``annotations``
  gives with that layout in use, as plain JSON values (dicts, lists, str, int, finite float,
  bool, None). The batch path then takes them as they are, with no per-sample call or JSON
  round trip (:func:`batch_annotated` says when a scene's is used).
- :class:`BatchCameras`: ``cameras_batch(layouts, times)``, the intrinsics K (n, 3, 3) and
  world-to-camera matrices (n, 4, 4) of a batch as float64 arrays, equal to the ``camera`` ``K`` and
  ``world_to_camera`` of its annotations. The training stream then hands those arrays over with
  every batch and builds the rest of the metadata only when it is read.
- :class:`BatchObjects`: ``objects_batch(layouts)``, the objects of a batch as three int64 arrays: each
  layout's object count, then every object's instance id and class id, layout after layout in the order
  its annotations list them. The training stream then makes the ``boxes``, ``labels`` and ``instances``
  columns from those and the boxes the GPU counted, without the rest of the metadata
  (:func:`batch_objects_agree` says when a scene's is used).
- :class:`PlansWithoutGL`: ``setup_planning(size)`` readies a copy of the scene for planning only, no GL
  context: its ``randomise_batch``, ``prepare_batch`` and ``cameras_batch`` then give what the set-up scene's
  give. The training stream's planning processes (:mod:`glrec.dataset.rendering.plan_child`) then also
  prepare the draws and the cameras, and the stream's own interpreter only unpickles them
  (:func:`plans_without_gl` says when a scene's is used).
- :class:`Finite`: ``done(t)`` says it has nothing left to show at ``t`` (a video
  input that ended); live streams stop there.
- :class:`~glrec.events.Interactive`: ``on_input(event)`` takes viewer input.

The dataset contract is described with examples in :mod:`glrec.scenes.passes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..events import Interactive


@runtime_checkable
class WritesPasses(Protocol):
    passes: Sequence[str]


@runtime_checkable
class Randomisable(Protocol):
    def randomise(self, params: dict[str, Any], rng: np.random.Generator) -> None: ...


@runtime_checkable
class BatchRandomisable(Protocol):
    def randomise_batch(self, params: Sequence[dict[str, Any]], seeds: np.ndarray) -> Sequence[Any]: ...

    def use_layout(self, layout: Any) -> None: ...


@runtime_checkable
class BatchDrawable(Protocol):
    def render_batch(self, target: Any, layouts: Sequence[Any], times: Sequence[float]) -> None: ...


@runtime_checkable
class BatchPrepared(Protocol):
    def prepare_batch(self, layouts: Sequence[Any], times: Sequence[float]) -> Any: ...

    def render_prepared(self, target: Any, prepared: Any) -> None: ...


@runtime_checkable
class DepthMarksDrawn(Protocol):
    depth_marks_drawn: bool


@runtime_checkable
class Parameterised(Protocol):
    parameters: Mapping[str, Any]


@runtime_checkable
class ReportsParams(Protocol):
    params: Mapping[str, Any]


@runtime_checkable
class LayoutParams(Protocol):
    def layout_params(self, layout: Any) -> Mapping[str, Any]: ...


@runtime_checkable
class Classified(Protocol):
    classes: Sequence[str]


@runtime_checkable
class Annotated(Protocol):
    def annotations(self, t: float) -> dict[str, Any]: ...


@runtime_checkable
class BatchAnnotated(Protocol):
    def annotations_batch(self, layouts: Sequence[Any], times: Sequence[float]) -> Sequence[dict[str, Any]]: ...


@runtime_checkable
class BatchCameras(Protocol):
    def cameras_batch(self, layouts: Sequence[Any], times: Sequence[float]) -> tuple[np.ndarray, np.ndarray]: ...


@runtime_checkable
class PlansWithoutGL(Protocol):
    def setup_planning(self, size: tuple[int, int]) -> None: ...


@runtime_checkable
class BatchObjects(Protocol):
    def objects_batch(self, layouts: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


@runtime_checkable
class Finite(Protocol):
    def done(self, t: float) -> bool: ...


def passes_of(scene: object) -> tuple[str, ...]:
    """The passes ``scene`` writes: its ``passes``, or colour alone."""
    return tuple(scene.passes) if isinstance(scene, WritesPasses) else ("rgb",)


def _owner(cls: type, name: str) -> type | None:
    return next((c for c in cls.__mro__ if name in vars(c)), None)


def batch_randomisable(scene: object) -> bool:
    """Whether ``scene`` lays out batches (:class:`BatchRandomisable`) in agreement with its ``randomise``.

    A class that overrides ``randomise`` below the class giving ``randomise_batch``
    (a subclass of the table that changes one sample) is not: its own ``randomise``
    must run for every sample.
    """
    if not isinstance(scene, BatchRandomisable):
        return False
    batch, single = _owner(type(scene), "randomise_batch"), _owner(type(scene), "randomise")
    return single is None or (batch is not None and issubclass(batch, single))


def batch_annotated(scene: object) -> bool:
    """Whether ``scene``'s :class:`BatchAnnotated` agrees with its ``annotations``: a class that overrides
    ``annotations`` below the class giving ``annotations_batch`` is annotated one sample at a time."""
    if not (isinstance(scene, BatchAnnotated) and isinstance(scene, Annotated)):
        return False
    batch, single = _owner(type(scene), "annotations_batch"), _owner(type(scene), "annotations")
    return single is None or (batch is not None and issubclass(batch, single))


def batch_objects_agree(scene: object) -> bool:
    """Whether ``scene``'s :class:`BatchObjects` may stand for the objects of its annotations: it annotates
    batches (:func:`batch_annotated`), and overrides neither ``annotations_batch`` nor ``annotations`` below the
    class giving ``objects_batch``."""
    if not (isinstance(scene, BatchObjects) and batch_annotated(scene)):
        return False
    given = _owner(type(scene), "objects_batch")
    owners = [_owner(type(scene), name) for name in ("annotations_batch", "annotations")]
    return given is not None and all(o is None or issubclass(given, o) for o in owners)


def batch_drawable(scene: object) -> bool:
    """Whether ``scene`` draws whole batches into layers: :class:`BatchDrawable` and :func:`batch_randomisable`
    (its layouts are what ``render_batch`` takes), with no ``render`` overridden below ``render_batch``'s class."""
    if not (isinstance(scene, BatchDrawable) and batch_randomisable(scene)):
        return False
    batch, single = _owner(type(scene), "render_batch"), _owner(type(scene), "render")
    return single is None or (batch is not None and issubclass(batch, single))


def batch_prepared(scene: object) -> bool:
    """Whether ``scene``'s :class:`BatchPrepared` halves may stand for its ``render_batch``: it draws batches
    (:func:`batch_drawable`) and overrides no ``render_batch`` below the classes giving the two halves."""
    if not (isinstance(scene, BatchPrepared) and batch_drawable(scene)):
        return False
    batch = _owner(type(scene), "render_batch")
    halves = (_owner(type(scene), "prepare_batch"), _owner(type(scene), "render_prepared"))
    return batch is None or all(h is not None and issubclass(h, batch) for h in halves)


def layout_params_agree(scene: object) -> bool:
    """Whether ``scene``'s :class:`LayoutParams` may stand for ``use_layout`` then ``params``: it reports params
    and lays out batches, and overrides no ``use_layout`` below the class giving ``layout_params``."""
    if not (isinstance(scene, LayoutParams) and isinstance(scene, ReportsParams) and batch_randomisable(scene)):
        return False
    given, using = _owner(type(scene), "layout_params"), _owner(type(scene), "use_layout")
    return using is None or (given is not None and issubclass(given, using))


def plans_without_gl(scene: object) -> bool:
    """Whether ``scene``'s :class:`PlansWithoutGL` set-up may stand for its ``setup`` when planning: it overrides
    no ``setup`` below the class giving ``setup_planning`` (a subclass of the table whose own ``setup`` keeps
    state its ``prepare_batch`` reads is prepared where it was set up)."""
    if not isinstance(scene, PlansWithoutGL):
        return False
    given, full = _owner(type(scene), "setup_planning"), _owner(type(scene), "setup")
    return full is None or (given is not None and issubclass(given, full))


def marks_drawn(scene: object) -> bool:
    """Whether ``scene`` says its depth marks every pixel it draws (:class:`DepthMarksDrawn`, set to True)."""
    return isinstance(scene, DepthMarksDrawn) and scene.depth_marks_drawn is True


def parameters_of(scene: object) -> Mapping[str, Any] | None:
    """The parameters a spec may set on ``scene`` (name -> default), or None where it does not list them."""
    return scene.parameters if isinstance(scene, Parameterised) else None


def params_in_effect(scene: object) -> dict[str, Any]:
    """The values ``scene`` says are in effect (its ``params``), or none."""
    return dict(scene.params) if isinstance(scene, ReportsParams) else {}


def classes_of(scene: object) -> tuple[str, ...]:
    return tuple(scene.classes) if isinstance(scene, Classified) else ()


__all__ = [
    "Annotated",
    "BatchAnnotated",
    "BatchCameras",
    "BatchDrawable",
    "BatchObjects",
    "BatchPrepared",
    "BatchRandomisable",
    "Classified",
    "DepthMarksDrawn",
    "Finite",
    "Interactive",
    "LayoutParams",
    "Parameterised",
    "PlansWithoutGL",
    "Randomisable",
    "ReportsParams",
    "WritesPasses",
    "batch_annotated",
    "batch_drawable",
    "batch_objects_agree",
    "batch_prepared",
    "batch_randomisable",
    "classes_of",
    "layout_params_agree",
    "marks_drawn",
    "parameters_of",
    "params_in_effect",
    "passes_of",
    "plans_without_gl",
]
