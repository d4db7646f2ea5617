"""The dataset spec: the TOML document (:mod:`.document`) and its randomised parameters (:mod:`.params`).

The bottom of the dataset room: it imports nothing else of it.
"""

from .document import MAX_SAMPLES, PASSES, DatasetSpec, OutputSpec, check_flag, real_number, whole_number

__all__ = ["MAX_SAMPLES", "PASSES", "DatasetSpec", "OutputSpec", "check_flag", "real_number", "whole_number"]
