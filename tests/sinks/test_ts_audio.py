"""MPEG-TS output carries only audio players decode: PCM, FLAC and Vorbis are left out with a warning."""

from __future__ import annotations

from pathlib import Path

import av
import pytest
from media import make_clip

from glrec import transcode


@pytest.mark.parametrize(("codec", "kept"), [("pcm_s16le", False), ("flac", False), ("libvorbis", False),
                                             ("aac", True)])  # fmt: skip
def test_mpegts_output_carries_only_audio_players_decode(gl, tmp_path: Path, codec: str, kept: bool, caplog) -> None:
    src = make_clip(tmp_path / f"a-{codec}.mkv", "-c:v", "libx264", "-c:a", codec, size="64x48", frames=10,
                    audio=True)  # fmt: skip
    out = tmp_path / f"a-{codec}.ts"
    transcode(src, out)
    with av.open(str(out)) as c:
        kinds = [(s.type, s.codec_context.name if s.codec_context else "?") for s in c.streams]
        assert sum(1 for _ in c.decode(video=0)) == 10
    if kept:
        assert ("audio", "aac") in kinds, kinds
    else:
        assert [k for k in kinds if k[0] != "video"] == [], kinds  # no unplayable bin_data stream
        assert "is not copied" in caplog.text
