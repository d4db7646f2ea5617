"""Per-env NVENC files from batches (glrec.BatchRecorder, encoder="nvenc") against the real PyNvVideoCodec
module and the stand-in driver libraries (see test_nvenc_contract.py): NOT the NVENC hardware.

What this proves: one session per env, each session reads exactly its env's frames in step order (the RGBA
surfaces NVENC would read, byte for byte, alpha 255), from CUDA and from host batches, 3- and 4-channel; every
env's file holds its env's packets; a GPU that refuses a session before every env has one refuses the recording
before anything is written, saying how many opened. What it cannot prove: NVENC's output (glrec doctor on a GPU
with NVENC is that proof).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from fake_drivers import nvenc_only, records, run_batch, stand_ins
from test_nvenc_contract import NV_FORMATS, planes_from_surface

ENVS, H, W, STEPS = 3, 34, 46, 4  # the stand-in's NVENC minimum is 32x32; 46 is no multiple of 16

JOBS: dict[str, tuple[dict, dict]] = {
    "cuda-rgb": ({"kind": "batch", "shape": [ENVS, H, W, 3], "steps": STEPS, "where": "cuda"}, {}),
    "cuda-rgba": ({"kind": "batch", "shape": [ENVS, H, W, 4], "steps": STEPS, "where": "cuda"}, {}),
    "host-rgb": ({"kind": "batch", "shape": [ENVS, H, W, 3], "steps": STEPS, "where": "host"}, {}),
    "limit": (
        {"kind": "batch", "shape": [ENVS, H, W, 3], "steps": 2, "where": "cuda"},
        {"GLREC_FAKE_NVENC_MAX_SESSIONS": "2"},
    ),
    "subset-under-limit": (
        {"kind": "batch", "shape": [ENVS, H, W, 3], "steps": 2, "where": "cuda", "options": {"envs": [0, 2]}},
        {"GLREC_FAKE_NVENC_MAX_SESSIONS": "2"},
    ),
    "yuv-refused": (
        {"kind": "batch", "shape": [ENVS, H, W, 3], "steps": 1, "where": "cuda", "options": {"pix_fmt": "nv12"}},
        {},
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    libs = stand_ins(tmp_path_factory)
    root = tmp_path_factory.mktemp("batch-contract")
    results = run_batch(JOBS, libs, root)

    def get(name: str) -> tuple[dict, list[dict], Path]:
        result = results[name]
        assert "crash" not in result, result.get("crash")
        return result, records(root / name / "nvenc.jsonl"), root / name

    return get


def assert_every_session_closed(nvenc: list[dict]) -> None:
    """Every session that opened (an ``open`` not refused at the limit) was destroyed again."""
    opens = len([r for r in nvenc if r["event"] == "open"])
    refused = len([r for r in nvenc if r["event"] == "error" and "session limit" in r["why"]])
    assert len([r for r in nvenc if r["event"] == "destroy"]) == opens - refused > 0


def _surfaces_by_session(nvenc: list[dict]) -> dict[int, list[np.ndarray]]:
    out: dict[int, list[np.ndarray]] = {}
    for rec in (r for r in nvenc if r["event"] == "encode"):
        assert rec["surface_format"] == NV_FORMATS["rgba"], rec
        assert (rec["surface_width"], rec["surface_height"]) == (W, H), rec
        (plane,) = planes_from_surface(Path(rec["dump"]).read_bytes(), "rgba", W, H, rec["surface_pitch"])
        out.setdefault(rec["session"], []).append(plane.reshape(H, W, 4))
    return out


SHAPES = ["cuda-rgb", "cuda-rgba", "host-rgb"]


@pytest.mark.parametrize("name", SHAPES)
def test_each_env_has_a_session_that_reads_exactly_its_frames(runs, name):
    check_sessions(name, *runs(name))


@pytest.fixture(scope="session")
def nvenc_only_libs(tmp_path_factory):
    return nvenc_only(tmp_path_factory)


@pytest.mark.gpu
def test_gpu_the_copies_on_a_real_gpu_give_each_session_its_env(tmp_path, nvenc_only_libs):
    """The real libcuda and copy engine (3 bytes into each 4-byte pixel, rows at the batch's pitch); stand-in NVENC."""
    results = run_batch({name: JOBS[name] for name in SHAPES}, nvenc_only_libs, tmp_path)
    for name in SHAPES:
        assert "crash" not in results[name], results[name]
        check_sessions(name, results[name], records(tmp_path / name / "nvenc.jsonl"), tmp_path / name)


def check_sessions(name: str, result: dict, nvenc: list[dict], work: Path) -> None:
    assert "error" not in result, result
    batches = np.load(work / "inputs" / "batches.npy")  # (steps, envs, H, W, C)
    sessions = _surfaces_by_session(nvenc)
    assert len(sessions) == ENVS
    matched = set()
    for surfaces in sessions.values():
        assert len(surfaces) == STEPS
        env = next(e for e in range(ENVS) if np.array_equal(surfaces[0][..., :3], batches[0, e, ..., :3]))
        matched.add(env)
        for step, surface in enumerate(surfaces):  # in step order, RGB as given, alpha opaque where none came
            assert np.array_equal(surface[..., :3], batches[step, env, ..., :3]), (name, env, step)
            alpha = batches[step, env, ..., 3] if batches.shape[-1] == 4 else np.full((H, W), 255, np.uint8)
            assert np.array_equal(surface[..., 3], alpha), (name, env, step)
    assert matched == set(range(ENVS))
    # every env's file holds its own session's packets, one per frame
    assert result["files"] == [f"env{e}.h264" for e in range(ENVS)]
    for video in result["videos"]:
        data = Path(video["path"]).read_bytes()
        markers = re.findall(rb"GLRECFAKE ([^;]*);", data)
        assert len(markers) == video["frames"] == STEPS, video
    assert result["encoder"] == "nvenc"
    assert_every_session_closed(nvenc)


def test_a_gpu_that_allows_fewer_sessions_than_envs_is_refused_before_anything_is_written(runs):
    result, nvenc, _ = runs("limit")
    error = result["error"]
    assert error["type"] == "ConfigError", error
    assert "NVENC opened 2 sessions" in error["message"] and "need one per env, 3 here" in error["message"], error
    assert "envs=[...]" in error["message"] and "layout='grid'" in error["message"]
    assert result["files"] == []
    refused = [r for r in nvenc if r["event"] == "error" and "session limit" in r["why"]]
    assert len(refused) == 1  # glrec stopped at the first refusal
    assert_every_session_closed(nvenc)
    assert not [r for r in nvenc if r["event"] == "encode"]


def test_a_subset_within_the_limit_records(runs):
    result, nvenc, _ = runs("subset-under-limit")
    assert "error" not in result, result
    assert result["files"] == ["env0.h264", "env2.h264"]
    assert [v["frames"] for v in result["videos"]] == [2, 2]
    assert len(_surfaces_by_session(nvenc)) == 2  # a session per recorded env, none for env 1
    assert_every_session_closed(nvenc)


def test_a_yuv_pix_fmt_is_refused_with_the_reason(runs):
    result, _, _ = runs("yuv-refused")
    assert result["error"]["type"] == "ConfigError"
    assert "read RGBA frames" in result["error"]["message"] and "layout='grid'" in result["error"]["message"]
    assert result["files"] == []
