"""The pipeline: plan which stages to use (and why), then build them in order.

Source -> target -> convert -> handoff -> encoder -> sink; see
:mod:`glrec.pipeline.plan` for the choice and :mod:`glrec.pipeline.build`
for the construction. The recorder drives the built pipeline.
"""

from .build import Pipeline, build_pipeline
from .plan import Plan, make_plan
from .timing import StageTimers, timed

__all__ = ["Pipeline", "Plan", "StageTimers", "build_pipeline", "make_plan", "timed"]
