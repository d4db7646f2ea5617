"""The CPU encoder's room: libx264, libx265, SVT-AV1 and mjpeg through PyAV (its encoder, limits, options, row)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._faces import lazy_names

if TYPE_CHECKING:
    from .encoder import CpuEncoder
    from .limits import CPU_ENCODERS, check_cpu_options, cpu_options_problem, cpu_size_problem, input_format
    from .options import CpuOptions
    from .row import ROW

__getattr__ = lazy_names(__name__, {
    "CpuEncoder": "encoder", "CPU_ENCODERS": "limits", "check_cpu_options": "limits",
    "cpu_options_problem": "limits", "cpu_size_problem": "limits", "input_format": "limits", "CpuOptions": "options",
    "ROW": "row",
})  # fmt: skip

__all__ = ["CPU_ENCODERS", "ROW", "CpuEncoder", "CpuOptions", "check_cpu_options", "cpu_options_problem",
           "cpu_size_problem", "input_format"]  # fmt: skip
