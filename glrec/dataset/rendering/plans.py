"""What each sample of a batch is before it is drawn: seeds, ``[params]`` and the scene's layouts, drawn at once."""

from __future__ import annotations

import contextlib
import logging
import pickle
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ...errors import ConfigError, GlrecError, SceneError
from ...scenes.capabilities import BatchCameras, BatchPrepared, BatchRandomisable, batch_randomisable
from ..spec.document import DatasetSpec
from ..spec.params import params_batch, sample_seeds
from .made import MadeWhenRead

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("glrec")

__all__ = [
    "TIME_PARAM", "PackedPlans", "SamplePlan", "chunk_extras", "chunk_layouts", "chunk_times", "plan_samples",
    "sample_plan",
]  # fmt: skip

#: A parameter every scene takes: the time rendered for an image (a clip's start time).
TIME_PARAM = "time"


@dataclass(frozen=True)
class SamplePlan:
    """What sample ``index`` is before it is drawn: its seed, its ``[params]`` and, for a
    :class:`~glrec.scenes.capabilities.BatchRandomisable` scene, its layout."""

    index: int
    seed: int
    params: dict[str, Any]
    layout: Any = None


class PackedPlans(MadeWhenRead[SamplePlan]):
    """A chunk's plans as a planning process sends them: pickled until first read, with what the draw needs beside
    them (:attr:`times`, :attr:`ids`), so a stream whose reader takes only the tensors never makes them.

    Unpickling a chunk's plans made a dozen Python objects a sample (about 5 us a sample on the H200's
    parent, and the garbage collector's passes over them after); the parent's interpreter lock bounds the
    128x128 stream. Read in any way (an item, iteration, :attr:`layouts`), they are unpickled once (thread-safe).
    """

    def __init__(self, plans: list[SamplePlan]) -> None:
        self._blob: bytes | None = pickle.dumps(plans, protocol=pickle.HIGHEST_PROTOCOL)
        self._n = len(plans)
        #: Each sample's time, and the chunk's box-table width (:func:`id_width`).
        self.times = chunk_times(plans)
        self.ids = id_width(p.layout for p in plans)
        self._plans: list[SamplePlan] | None = None
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:  # as itself, still packed (not as the list it reads as)
        return (_unpacked, (), self.__getstate__())

    def __getstate__(self) -> tuple[bytes | None, int, list[float], int, list[SamplePlan] | None]:
        return self._blob, self._n, self.times, self.ids, self._plans

    def __setstate__(self, state: tuple[bytes | None, int, list[float], int, list[SamplePlan] | None]) -> None:
        self._blob, self._n, self.times, self.ids, self._plans = state
        self._lock = threading.Lock()

    def materialise(self) -> list[SamplePlan]:
        """The plans, unpickled on the first call."""
        with self._lock:
            if self._plans is None:
                assert self._blob is not None
                self._plans, self._blob = pickle.loads(self._blob), None
            return self._plans

    @property
    def layouts(self) -> Sequence[Any]:
        """The samples' layouts, read when first indexed or iterated."""
        return _Layouts(self)

    def __len__(self) -> int:
        return self._n

    @property
    def unread(self) -> bool:
        """Whether the plans are still pickled (nothing has read them)."""
        return self._plans is None


def _unpacked() -> PackedPlans:
    return PackedPlans.__new__(PackedPlans)


class _Layouts(MadeWhenRead[Any]):
    def __init__(self, plans: PackedPlans) -> None:
        self._plans = plans
        self._made: list[Any] | None = None

    def __len__(self) -> int:
        return len(self._plans)

    def materialise(self) -> list[Any]:
        if self._made is None:
            self._made = [p.layout for p in self._plans.materialise()]
        return self._made


def id_width(layouts: Iterable[Any]) -> int:
    """1 + the most objects any of ``layouts`` has (``object_count`` where it says, else ``len(objects)``): the
    width of a chunk's box table."""
    return 1 + max((_object_count(lay) for lay in layouts), default=0)


def _object_count(layout: Any) -> int:
    count = getattr(layout, "object_count", None)
    return int(count) if count is not None else len(getattr(layout, "objects", ()))


def chunk_layouts(plans: Sequence[SamplePlan]) -> Sequence[Any]:
    """The layouts of ``plans`` (left unread for :class:`PackedPlans`)."""
    return plans.layouts if isinstance(plans, PackedPlans) else [p.layout for p in plans]


def chunk_times(plans: Sequence[SamplePlan]) -> list[float]:
    """Each plan's time (the ``time`` parameter, 0 without one)."""
    return plans.times if isinstance(plans, PackedPlans) else [float(p.params.get(TIME_PARAM, 0.0)) for p in plans]


def plan_samples(spec: DatasetSpec, indices: list[int] | range, scene: object = None) -> list[SamplePlan]:
    """Plans of samples ``indices``, drawn for the batch at once (vectorised, counter-based).

    With a ``scene`` that lays out batches, each plan also holds its layout. Plan ``j`` is
    a pure function of (spec's seed, ``indices[j]``): the batch never changes a sample.
    Raises SceneError naming the sample whose parameters the scene refuses.
    """
    for index in indices:
        if not 0 <= index < spec.samples:
            raise ConfigError(f"Sample index {index} is outside 0..{spec.samples - 1}.")
    seeds = sample_seeds(spec.seed, list(indices))
    params = params_batch(spec.distributions(), seeds)
    if scene is None or not batch_randomisable(scene):
        return [SamplePlan(i, int(s), p) for i, s, p in zip(indices, seeds, params, strict=True)]
    assert isinstance(scene, BatchRandomisable)
    # The scene gets its own dicts (it may change them), without the time (every sample's dict has the same keys).
    scene_params = [dict(p) for p in params]
    if scene_params and TIME_PARAM in scene_params[0]:
        for p in scene_params:
            del p[TIME_PARAM]
    try:
        layouts = list(scene.randomise_batch(scene_params, seeds))
    except Exception:
        if len(scene_params) == 1:
            layouts = [_layout_one(spec, scene, scene_params[0], seeds[:1], indices[0])]
        else:  # find the sample the scene refuses, one at a time (the error path only)
            layouts = [_layout_one(spec, scene, p, seeds[j : j + 1], indices[j]) for j, p in enumerate(scene_params)]
    return [SamplePlan(i, int(s), p, lay) for i, s, p, lay in zip(indices, seeds, params, layouts, strict=True)]


def _layout_one(spec: DatasetSpec, scene: BatchRandomisable, params: dict[str, Any], seed: Any, index: int) -> Any:
    try:
        return next(iter(scene.randomise_batch([params], seed)))
    except GlrecError:
        raise
    except Exception as exc:
        raise SceneError(
            f"Scene {spec.scene!r} failed to randomise sample {index} with {params}: {type(exc).__name__}: {exc}"
        ) from exc


def sample_plan(spec: DatasetSpec, index: int) -> tuple[int, dict[str, Any]]:
    """The seed and the sampled ``[params]`` of sample ``index`` (no rendering)."""
    plan = plan_samples(spec, [index])[0]
    return plan.seed, plan.params


def chunk_extras(
    scene: object, plans: Sequence[SamplePlan], prepare: bool, cameras: bool, prepared: Any = None, cams: Any = None
) -> tuple[Any, tuple[np.ndarray, np.ndarray] | None]:
    """A chunk's prepared draw (where ``prepare``: the scene's ``prepare_batch``) and its cameras (where
    ``cameras``: its ``cameras_batch``), made now unless given; None for what the scene raised making (it is
    made again where its error is named: the draw from the layouts, the cameras when read)."""
    prepared = prepared if prepare else None
    if (prepare and prepared is None) or (cameras and cams is None):
        layouts, times = list(chunk_layouts(plans)), chunk_times(plans)  # read once, for either
        if prepare and prepared is None:
            try:
                prepared = cast(BatchPrepared, scene).prepare_batch(layouts, times)
            except Exception as exc:
                log.debug("glrec: preparing a chunk's draw failed (%s); it is drawn from its layouts", exc)
        if cameras and cams is None:
            with contextlib.suppress(Exception):
                cams = cast(BatchCameras, scene).cameras_batch(layouts, times)
    return prepared, cams if cameras else None
