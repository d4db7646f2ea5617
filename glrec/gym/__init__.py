"""``glrec.gym.RecordVideo``: Gymnasium's ``RecordVideo`` wrapper, streaming frames to the encoder.

See :mod:`glrec.gym.record_video`; MuJoCo envs record from MuJoCo's own
framebuffer (:mod:`glrec.gym.mujoco`); ``RecordVectorVideo`` records each env of a
vector env in its own files (:mod:`glrec.gym.vector`). Needs ``pip install glrec[gym]``.
"""

from .record_video import RecordVideo
from .vector import RecordVectorVideo

__all__ = ["RecordVectorVideo", "RecordVideo"]
