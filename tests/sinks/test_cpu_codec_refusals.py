"""What GIF and VP9 cannot do is refused in one line that says why, before any file is made."""

from __future__ import annotations

import numpy as np
import pytest

import glrec


@pytest.mark.parametrize(
    "name, options, words",
    [
        ("x.gif", {"fps": 60}, "fps 60 is above what a GIF plays, 50"),
        ("x.gif", {"quality": 80}, "a GIF has no quality setting"),
        ("x.gif", {"crf": 20}, "has no rate control, GOP or threads"),
        ("x.gif", {"threads": 2}, "drop threads"),
        ("x.gif", {"preset": "fast"}, "has no presets"),
        ("x.gif", {"pix_fmt": "nv12"}, "takes yuv420p or yuv444p, not nv12"),
        ("x.gif", {"live": True}, "A GIF is a file, not a stream"),
        ("x.gif", {"codec": "h264"}, "A .gif file cannot carry h264"),
        ("x.webm", {"qp": 20}, "libvpx-vp9 (vp9) has no constant quantiser: use crf 0-63"),
        ("x.webm", {"bframes": 2}, "makes no B-frames"),
        ("x.webm", {"crf": 30.5}, "crf in whole steps 0-63, not 30.5"),
        ("x.webm", {"preset": "veryfast"}, "Unknown preset for libvpx-vp9 'veryfast'. Valid: 0, 1"),
        ("x.webm", {"pix_fmt": "nv12"}, "takes yuv420p or yuv444p, not nv12"),
        ("x.webm", {"live": True}, "no low-latency VP9 settings"),
        ("x.webm", {"quality": 90}, "is JPEG quality (codec mjpeg); vp9 takes crf"),
        ("x.webm", {"codec": "h264"}, "A .webm file cannot carry h264"),
        ("x.mp4", {"codec": "gif"}, "A .mp4 file cannot carry gif"),
        ("x.mp4", {"codec": "vp9"}, "A .mp4 file cannot carry vp9"),
    ],
)
def test_refused_before_anything_is_written(tmp_path, name, options, words):
    out = tmp_path / name
    frames = [np.zeros((48, 64, 3), np.uint8)] * 2
    with pytest.raises(glrec.ConfigError) as info:
        glrec.write_video(out, frames, **{"fps": 10, **options})
    assert words in str(info.value)
    assert not out.exists()
