"""``glrec.gym.RecordVideo``: Gymnasium's ``RecordVideo`` wrapper, streaming frames to the encoder.

See :mod:`glrec.gym.record_video`; MuJoCo envs record from MuJoCo's own
framebuffer (:mod:`glrec.gym.mujoco`). Needs ``pip install glrec[gym]``.
"""

from .record_video import RecordVideo

__all__ = ["RecordVideo"]
