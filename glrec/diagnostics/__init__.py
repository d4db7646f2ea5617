"""``glrec info`` (what this machine has) and ``glrec doctor`` (does each stage work, end to end)."""

from .common import FAIL, MIN_PSNR, NA, PASS, Check, decoded_luma, decoded_planes, psnr
from .doctor import count_nvdec_frames, run_doctor
from .info import info_lines

__all__ = ["FAIL", "MIN_PSNR", "NA", "PASS", "Check", "count_nvdec_frames", "decoded_luma", "decoded_planes",
           "info_lines", "psnr", "run_doctor"]  # fmt: skip
