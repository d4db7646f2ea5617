"""What each sample of a batch is before it is drawn: seeds, ``[params]`` and the scene's layouts, drawn at once."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ...errors import ConfigError, GlrecError, SceneError
from ...scenes.capabilities import BatchCameras, BatchPrepared, BatchRandomisable, batch_randomisable
from ..spec.document import DatasetSpec
from ..spec.params import params_batch, sample_seeds

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("glrec")

__all__ = ["TIME_PARAM", "SamplePlan", "chunk_extras", "plan_samples", "sample_plan"]

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
    scene: object, plans: list[SamplePlan], prepare: bool, cameras: bool, prepared: Any = None, cams: Any = None
) -> tuple[Any, tuple[np.ndarray, np.ndarray] | None]:
    """A chunk's prepared draw (where ``prepare``: the scene's ``prepare_batch``) and its cameras (where
    ``cameras``: its ``cameras_batch``), made now unless given; None for what the scene raised making (it is
    made again where its error is named: the draw from the layouts, the cameras when read)."""
    layouts = [p.layout for p in plans]
    times = [float(p.params.get(TIME_PARAM, 0.0)) for p in plans]
    if not prepare:
        prepared = None
    elif prepared is None:
        try:
            prepared = cast(BatchPrepared, scene).prepare_batch(layouts, times)
        except Exception as exc:
            log.debug("glrec: preparing a chunk's draw failed (%s); it is drawn from its layouts", exc)
    if cameras and cams is None:
        with contextlib.suppress(Exception):
            cams = cast(BatchCameras, scene).cameras_batch(layouts, times)
    return prepared, cams if cameras else None
