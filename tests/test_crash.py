"""kill -9 in the middle of a recording: what an independent decoder finds in the file.

A child process records the ``bars`` scene (every frame carries its index as a
time code) and reports after each frame how many frames it had submitted,
encoded and handed to the file. The test kills it with SIGKILL mid-stream and
decodes what is left with PyAV and ffprobe.

The bound: a container holds at most one fragment (<= 1 s of video) in memory,
so every frame handed to the file more than one second of video before the
kill is on disk; frames still in the pipeline (readback ring, queue, encoder
lookahead) are lost as well.
"""

from __future__ import annotations

import math
import signal

import pytest
from crash_helpers import (
    contiguous_prefix,
    decode_indices,
    mkv_cluster_blocks,
    mp4_fragment_samples,
    start_child,
)

FPS = 30.0
RING, QUEUE = 3, 8  # the child's Recorder(ring=3, queue_size=8)
MAX_BFRAMES = 3  # x264/x265 veryfast: a P-frame is written up to 3 B-frames ahead of them


def _record_and_kill(path, kill_after: int, *extra: str) -> dict[str, int]:
    """Run the child until it has submitted ``kill_after`` frames, SIGKILL it; return its last report."""
    proc = start_child(str(path), "--fps", str(FPS), *extra)
    last = None
    max_lag = 0  # frames the encoder held back (taken but not yet out as packets)
    assert proc.stdout is not None
    for line in proc.stdout:
        if not line.startswith("progress"):
            continue
        submitted, encoded, written = map(int, line.split()[1:])
        max_lag = max(max_lag, encoded - written)
        last = {"submitted": submitted, "encoded": encoded, "written": written}
        if submitted >= kill_after:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    assert last is not None, "the child reported no progress"
    last["max_lag"] = max_lag
    return last


@pytest.mark.parametrize(
    "name, kill_after",
    [
        ("killed.mp4", 100),
        ("killed.mp4", 157),
        ("killed.mkv", 100),
        ("killed.h264", 100),
        ("killed.hevc", 64),
        ("killed.webm", 100),
        ("killed.gif", 60),
        ("killed_%06d.png", 60),
    ],
)
def test_sigkill_leaves_a_decodable_file_missing_at_most_one_fragment(gl, tmp_path, ffprobe, name, kill_after):
    path = tmp_path / name
    codec = {".hevc": "hevc", ".webm": "vp9", ".gif": "gif", ".png": "png"}.get(path.suffix, "h264")
    report = _record_and_kill(path, kill_after, "--codec", codec)

    indices = decode_indices(path, FPS)
    probe = ffprobe(path, "nb_read_frames")  # a second, independent reader of the same file
    assert int(probe["nb_read_frames"]) == len(indices)

    # Only real frames, each once, in order, none beyond what the child had made.
    assert indices == sorted(set(indices))
    assert indices[-1] <= report["submitted"]  # the child may submit one more before the signal lands
    # Everything up to the last frames is there: a gap can only be B-frames still owed at the end.
    assert contiguous_prefix(indices) >= len(indices) - MAX_BFRAMES

    fragment = math.ceil(FPS)  # at most one second of video waits in memory
    if path.suffix in (".h264", ".hevc", ".png"):
        fragment = 0  # raw bitstreams are written unbuffered, packet by packet; each PNG is renamed into place
    if path.suffix == ".gif":
        fragment = 1  # the gif muxer writes a frame once the next one gives its delay
    assert len(indices) >= report["written"] - fragment, report
    # From the frames submitted: the fragment plus what was still in the pipeline.
    in_pipeline = RING + QUEUE + report["max_lag"] + 1
    assert len(indices) >= report["submitted"] - fragment - in_pipeline, report


@pytest.mark.parametrize("gop", [None, 300])
def test_mp4_fragments_hold_at_most_one_second_whatever_the_gop(gl, tmp_path, gop):
    """With a 10 s GOP, fragments are still cut every second (frag_duration), not at keyframes only."""
    path = tmp_path / "frag.mp4"
    extra = ("--gop", str(gop)) if gop else ()
    _record_and_kill(path, 160, *extra)
    samples = mp4_fragment_samples(path)
    assert len(samples) >= 3, samples
    assert max(samples) <= math.ceil(FPS), samples
    assert sum(samples) == len(decode_indices(path, FPS))


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_mkv_clusters_hold_at_most_one_second(gl, tmp_path, fps):
    path = tmp_path / "clusters.mkv"
    child = start_child(str(path), "--fps", str(fps), "--frames", str(int(4 * fps)), "--size", "64x64")
    _out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    blocks = mkv_cluster_blocks(path)
    assert sum(blocks) == int(4 * fps)
    assert max(blocks) <= math.ceil(fps), blocks
    assert len(blocks) >= 4, blocks


def test_script_that_never_closes_is_finished_at_exit(gl, tmp_path, ffprobe):
    """No close(), no with: the exit safety net flushes the encoder and writes a normal MP4."""
    path = tmp_path / "unclosed.mp4"
    child = start_child(str(path), "--frames", "45", "--no-close")
    _out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert "was never closed; finishing it at exit" in err
    assert decode_indices(path, FPS) == list(range(45))
    assert b"moof" not in path.read_bytes()  # finished and rewritten, not a killed fragmented file
