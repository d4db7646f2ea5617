"""The NVENC contract on two stand-in GPUs, one without NVENC; ``glrec info``'s sessions; doctor's colour check.

Same harness as ``tests/encoders/test_nvenc_contract.py`` (the real PyNvVideoCodec wheel,
stand-in ``libcuda.so.1`` and ``libnvidia-encode.so.1``; NOT NVENC hardware),
with the child process started on two stand-in CUDA devices. The stand-in NVENC
refuses sessions on the devices listed in ``GLREC_FAKE_NVENC_NO_ENCODER``
(status 2, as an H100 does) and logs the CUDA device of every session it opens.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_drivers import records, run_batch, stand_ins

NO_ENCODER = "GLREC_FAKE_NVENC_NO_ENCODER"
UNSUPPORTED = "NV_ENC_ERR_UNSUPPORTED_DEVICE (2)"
CODECS = ["h264", "hevc", "av1"]
JOBS: dict[str, tuple[dict, dict]] = {}


def job(name: str, env: dict[str, str] | None = None, **spec) -> None:
    JOBS[name] = (spec, env or {})


@pytest.fixture(scope="module")
def two_gpus(tmp_path_factory):
    """Every job below, run in one child process that sees two stand-in CUDA devices."""
    libs = stand_ins(tmp_path_factory)
    root = tmp_path_factory.mktemp("devices")
    results = run_batch(JOBS, libs, root, env={"GLREC_FAKE_CUDA_DEVICES": "2"})

    def get(name: str) -> tuple[dict, list[dict], Path]:
        result = results[name]
        if "crash" in result:
            raise AssertionError(f"job {name} crashed:\n{result['crash']}")
        return result, records(root / name / "nvenc.jsonl"), root / name

    return get


def sessions(nvenc: list[dict]) -> list[int]:
    """The CUDA device of every session opened (or refused), in order."""
    return [r["cuda_device"] for r in nvenc if r["event"] == "open"]


# -- item 2: the caps and the probe are the chosen device's ------------------------------------------

probe_steps = [{"codec": c} for c in CODECS]
job("probe-1-lacks", {NO_ENCODER: "1"}, kind="probe", device=1, steps=probe_steps)
job("probe-0-lacks", {NO_ENCODER: "0"}, kind="probe", device=1, steps=probe_steps)
job("probe-both", {NO_ENCODER: ""}, kind="probe", device=1, steps=probe_steps)
job("plan-1-lacks", {NO_ENCODER: "1"}, kind="plan", cuda_device=1, options={"size": [64, 64], "encoder": "nvenc"})
job("plan-1-lacks-auto", {NO_ENCODER: "1"}, kind="plan", cuda_device=1, options={"size": [64, 64]})
job("open-0-lacks", {NO_ENCODER: "0"}, kind="open", pipeline={"cuda_device": 1}, again=True,
    options={"size": [64, 64], "encoder": "nvenc"})  # fmt: skip
job("open-0-lacks-auto", {NO_ENCODER: "0"}, kind="open", pipeline={"cuda_device": 1}, again=True,
    options={"size": [64, 64]})  # fmt: skip
job("encode-0-lacks", {NO_ENCODER: "0"}, kind="encode", device=1, frames=[0],
    options={"size": [64, 64], "fps": 30, "encoder": "nvenc"})  # fmt: skip


def contexts(cuda: list[dict]) -> list[int]:
    """The CUDA device of every context made or retained (the stand-in logs both), in order."""
    return [r["device"] for r in cuda if r["call"] in ("cuCtxCreate", "cuDevicePrimaryCtxRetain")]


def test_a_device_without_nvenc_is_found_out_on_that_device(two_gpus):
    # device 0 has NVENC, device 1 has none: PyNvVideoCodec's GetEncoderCaps asked device 0 and said yes
    got, nvenc, _ = two_gpus("probe-1-lacks")
    assert all(UNSUPPORTED in p for p in got["problems"]), got["problems"]
    assert sessions(nvenc) == [1]  # one session, on device 1's context, for all three codecs
    explicit = two_gpus("plan-1-lacks")[0]
    assert explicit["error"]["type"] == "EncoderUnavailableError" and UNSUPPORTED in explicit["error"]["message"]
    auto = two_gpus("plan-1-lacks-auto")[0]
    assert auto["encoder"] == "cpu" and UNSUPPORTED in auto["describe"], auto


def test_the_probe_for_device_1_makes_no_context_and_no_session_on_device_0(two_gpus):
    """Issue 30 item 11: the caps for cuda_device=1 come from device 1 alone (device 0 was asked too)."""
    for name in ("probe-0-lacks", "probe-both"):
        got, nvenc, work = two_gpus(name)
        assert got["problems"] == [None, None, None], got  # device 1 has NVENC, for all three codecs
        assert sessions(nvenc) == [1], sessions(nvenc)  # one session, for all three codecs, on device 1
        assert [r["event"] for r in nvenc if r["event"] in ("open", "destroy")] == ["open", "destroy"]
        cuda = records(work / "cuda.jsonl")
        assert contexts(cuda) and set(contexts(cuda)) == {1}, contexts(cuda)


def test_a_device_with_nvenc_next_to_device_0_without_says_what_pynvvideocodec_needs(two_gpus):
    # device 1 has NVENC, device 0 has none. PyNvVideoCodec 2.2.4's CreateEncoder for device 1 first opens
    # a caps session on device 0 and fails there (a version that stops doing so changes this test)...
    result, nvenc, _ = two_gpus("encode-0-lacks")
    assert result["error"]["type"] == "EncoderUnavailableError" and UNSUPPORTED in result["error"]["message"]
    assert sessions(nvenc) == [0]
    # ...so opening the planned encoder says what it needs; the plan asked device 1 only
    got, nvenc, _ = two_gpus("open-0-lacks")
    assert got["planned"] == "nvenc" and got["error"]["type"] == "EncoderUnavailableError", got
    message = got["error"]["message"]
    assert "CUDA device 1 has NVENC, but PyNvVideoCodec checks NVENC on CUDA device 0" in message, message
    assert UNSUPPORTED in message and "CUDA_VISIBLE_DEVICES=GPU-" in message and "cuda_device 0" in message
    assert "\n" not in message and ".." not in message
    assert sessions(nvenc) == [1, 0]  # glrec's probe on device 1, PyNvVideoCodec's own check on device 0
    # the answer is kept: planning again tries no session (each failed one leaks PyNvVideoCodec's context)
    again = got["replanned"]["error"]
    assert again["type"] == "EncoderUnavailableError" and "CUDA_VISIBLE_DEVICES=GPU-" in again["message"], again
    # auto on device 1 falls back there (issue 30 item 10: a chosen device no longer stops the fallback)
    auto, nvenc, _ = two_gpus("open-0-lacks-auto")
    assert auto["planned"] == "nvenc" and auto["encoder"] == "cpu" and auto["device"] == 1, auto
    assert any("CUDA_VISIBLE_DEVICES=GPU-" in r for r in auto["fallbacks"]), auto
    assert auto["replanned"]["encoder"] == "cpu" and "CUDA_VISIBLE_DEVICES" in auto["replanned"]["describe"], auto
    assert sessions(nvenc) == [1, 0]


# -- item 5: one session per device, not per codec -------------------------------------------------

job("info-none", {NO_ENCODER: "0,1"}, kind="info")
job("info-all", {NO_ENCODER: ""}, kind="info")


def test_info_opens_one_session_per_device(two_gpus):
    lines, nvenc, _ = two_gpus("info-none")
    lines = lines["lines"]
    assert sorted(sessions(nvenc)) == [0, 1], sessions(nvenc)  # a definitive "no NVENC" per device, not per codec
    for device in (0, 1):
        for codec in CODECS:
            (line,) = [x for x in lines if x.strip().startswith(f"nvenc {codec} (CUDA {device}):")]
            assert f"unavailable: {UNSUPPORTED}" in line, line
    lines, nvenc, _ = two_gpus("info-all")
    assert sorted(sessions(nvenc)) == [0, 1]
    opened = [x for x in lines["lines"] if x.strip().startswith("nvenc ")]
    assert len(opened) == 6 and all(x.endswith(": opens a session") for x in opened), opened


# -- item 6: doctor's rgba colour measurement reaches a verdict --------------------------------------

job("doctor-rgb", kind="doctor_rgb")


def test_doctors_rgba_colour_check_runs_and_says_what_it_can(two_gpus):
    result, nvenc, work = two_gpus("doctor-rgb")
    # the stand-in returns marker packets, no pictures: the verdict says so, instead of crashing
    assert result["status"] == "FAIL", result
    assert result["detail"].startswith("NVENC returned 5 packets for 5 frames, which FFmpeg cannot decode ("), result
    assert result["detail"].endswith("): nothing to measure (a stand-in NVENC library, or a broken driver)"), result
    # what it measured from: the colour bars, as ABGR surfaces, byte for byte
    encodes = [r for r in nvenc if r["event"] == "encode"]
    assert len(encodes) == 5 and all(r["surface_format"] == 0x10000000 for r in encodes)  # NV_ENC_BUFFER_FORMAT_ABGR
    for i, rec in enumerate(encodes):
        want = np.frombuffer((work / "inputs" / f"frame_{i}.bin").read_bytes(), np.uint8).reshape(240, 320 * 4)
        raw = np.frombuffer(Path(rec["dump"]).read_bytes(), np.uint8)
        got = raw[: 240 * rec["surface_pitch"]].reshape(240, rec["surface_pitch"])[:, : 320 * 4]
        assert np.array_equal(got, want), f"frame {i}: {int((got != want).sum())} bytes differ"
    (init,) = [r for r in nvenc if r["event"] == "initialize"]
    assert init["rc"]["constQP"] == [4, 4, 4] and init["codec"] == "h264"
