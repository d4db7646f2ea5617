"""The pipeline: plan which stages to use (and why), then build them in order.

Source -> target -> convert -> handoff -> encoder -> sink; see
:mod:`glrec.pipeline.plan` for the choice and :mod:`glrec.pipeline.build`
for the construction. The recorder drives the built pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._faces import lazy_names

if TYPE_CHECKING:
    from .build import Pipeline, build_pipeline
    from .options import PipelineOptions
    from .plan import Plan, make_plan
    from .timing import StageTimers, timed

__getattr__ = lazy_names(__name__, {
    "Pipeline": "build", "build_pipeline": "build", "PipelineOptions": "options", "Plan": "plan", "make_plan": "plan",
    "StageTimers": "timing", "timed": "timing",
})  # fmt: skip

__all__ = ["Pipeline", "PipelineOptions", "Plan", "StageTimers", "build_pipeline", "make_plan", "timed"]
