"""The glrec <-> PyNvVideoCodec contract, with stand-in driver libraries; NOT the NVENC hardware.

glrec's real ``NvencEncoder`` runs in a child process against the real
PyNvVideoCodec wheel, whose calls into the driver land in two stand-ins compiled
from ``tests/native/`` (``libcuda.so.1``: "device" memory in host memory;
``libnvidia-encode.so.1``: records the NVENC configuration, dumps every input
surface, returns marker packets). So these tests prove what glrec asks of
PyNvVideoCodec and what PyNvVideoCodec asks of NVENC: the bytes NVENC would read,
every setting, timestamps, keyframe requests, flushing and errors. They prove
nothing about NVENC's output (compression, colour conversion, speed): no machine
glrec is developed on has an NVENC unit. ``glrec doctor`` on a GPU with NVENC is
that proof.

CI builds the stand-ins with gcc (``GLREC_REQUIRE_NVENC_CONTRACT=1`` makes a
missing compiler, header or package a failure there). The ``gpu`` variant at the
end uses the real libcuda and only the stand-in NVENC library (built here, or
taken from ``$GLREC_FAKE_DRIVERS_DIR`` on a machine without gcc or the header).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from crash_helpers import child_env
from fake_drivers import build, nvenc_only, records, run_batch, run_child, stand_ins

SIZE = [72, 46]  # width not a multiple of 16 or of NVENC's pitch alignment: strides must be honoured
NV_FORMATS = {"rgba": 0x10000000, "nv12": 0x1, "yuv420p": 0x100, "yuv444p": 0x1000}  # NV_ENC_BUFFER_FORMAT
VBR, CBR, CONSTQP, IDR = 1, 2, 0, 3


@pytest.fixture(scope="session")
def fake_libs(tmp_path_factory):
    return stand_ins(tmp_path_factory)


#: Every job run in the shared child process: name -> (job, environment). Tests register theirs at import.
JOBS: dict[str, tuple[dict, dict]] = {}


def job(name: str, options: dict | None = None, frames=(0, 1, 2, 3, 4), env: dict | None = None, **extra) -> str:
    """Register an encode job (or, with ``kind``, another job) and return its name."""
    if "kind" in extra:
        JOBS[name] = ({**extra, **({"options": options} if options is not None else {})}, env or {})
    else:
        opts = {"size": SIZE, "fps": 30, "encoder": "nvenc", **(options or {})}
        JOBS[name] = ({"kind": "encode", "options": opts, "frames": list(frames), **extra}, env or {})
    return name


@pytest.fixture(scope="session")
def contract(fake_libs, tmp_path_factory):
    """Run every registered job in one child; give (result, NVENC records, CUDA records, work dir) by name."""
    root = tmp_path_factory.mktemp("contract")
    results = run_batch(JOBS, fake_libs, root)

    def get(name: str):
        result = results[name]
        if "crash" in result:
            raise AssertionError(f"job {name} crashed:\n{result['crash']}")
        return result, records(root / name / "nvenc.jsonl"), records(root / name / "cuda.jsonl"), root / name

    return get


def encode(work: Path, libs: Path, options: dict, frames=(0, 1, 2, 3, 4), env=None, **extra):
    """Run one encode job in its own child; return (result, NVENC records, CUDA records)."""
    opts = {"size": SIZE, "fps": 30, "encoder": "nvenc", **options}
    result = run_child({"kind": "encode", "options": opts, "frames": list(frames), **extra}, libs, work, env)
    return result, records(work / "nvenc.jsonl"), records(work / "cuda.jsonl")


def packets(result: dict) -> list[dict]:
    return [p for call in result["calls"] for p in call["packets"]] + result.get("flush", [])


def initialize(nvenc: list[dict]) -> dict:
    (init,) = [r for r in nvenc if r["event"] == "initialize"]
    return init


def planes_from_surface(raw: bytes, pix_fmt: str, w: int, h: int, pitch: int) -> list[np.ndarray]:
    """The planes NVENC reads from a surface: rows at ``pitch`` bytes, chroma pitch halved for IYUV."""
    buf = np.frombuffer(raw, np.uint8)

    def plane(offset: int, rows: int, row_pitch: int, width: int) -> np.ndarray:
        return buf[offset : offset + rows * row_pitch].reshape(rows, row_pitch)[:, :width]

    if pix_fmt == "rgba":
        return [plane(0, h, pitch, 4 * w)]
    if pix_fmt == "nv12":
        return [plane(0, h, pitch, w), plane(pitch * h, h // 2, pitch, w)]
    if pix_fmt == "yuv420p":
        c = pitch // 2
        return [plane(0, h, pitch, w), plane(pitch * h, h // 2, c, w // 2), plane(pitch * h + c * (h // 2), h // 2, c,
                                                                                   w // 2)]  # fmt: skip
    return [plane(i * pitch * h, h, pitch, w) for i in range(3)]


def host_planes(data: bytes, pix_fmt: str, w: int, h: int) -> list[np.ndarray]:
    """glrec's planes as they sit in a device frame: back to back, tightly packed."""
    from glrec.convert import PlaneLayout

    layout = PlaneLayout.for_format(pix_fmt, w, h)
    buf = np.frombuffer(data, np.uint8)
    return [buf[off : off + pw * ph * c].reshape(ph, pw * c)
            for (pw, ph, c), off in zip(layout.planes, layout.offsets, strict=True)]  # fmt: skip


def read_failures(nvenc: list[dict]) -> list[dict]:
    """The stand-in's reports of input surfaces it could not read (through libcuda) or dump."""
    return [r for r in nvenc if r["event"] == "surface_read_failed"]


def assert_surfaces_match(work: Path, nvenc: list[dict], frames: list[int], pix_fmt: str, w: int, h: int) -> None:
    assert not read_failures(nvenc), read_failures(nvenc)
    encodes = [r for r in nvenc if r["event"] == "encode"]
    assert [r["picture"] for r in encodes] == list(range(len(frames)))
    from glrec.convert import PlaneLayout

    nbytes = PlaneLayout.for_format(pix_fmt, w, h).nbytes
    for rec, index in zip(encodes, frames, strict=True):
        # the reference first: a short one is the harness's fault, not a short surface
        ref = (work / "inputs" / f"frame_{index}.bin").read_bytes()
        assert len(ref) == nbytes, f"reference frame_{index}.bin holds {len(ref)} bytes, {pix_fmt} {w}x{h} {nbytes}"
        assert rec["surface_format"] == NV_FORMATS[pix_fmt], rec
        assert (rec["surface_width"], rec["surface_height"]) == (w, h)
        assert rec["resource_type"] == 1 and rec["memory_type"] == 2, rec  # a CUDA device pointer, device memory
        # the dump is every plane's rows at full pitch, inside the allocation PyNvVideoCodec registered
        offset, rows, _, pitch = rec["planes"][-1]
        assert rec["dump_bytes"] == offset + rows * pitch, rec
        assert rec["alloc_base"] <= rec["surface_ptr"], rec
        assert rec["surface_ptr"] + rec["dump_bytes"] <= rec["alloc_base"] + rec["alloc_size"], rec
        raw = Path(rec["dump"]).read_bytes()
        assert len(raw) == rec["dump_bytes"] > 0, f"picture {rec['picture']}: dump holds {len(raw)} bytes: {rec}"
        got = planes_from_surface(raw, pix_fmt, w, h, rec["surface_pitch"])
        want = host_planes(ref, pix_fmt, w, h)
        for p, (a, b) in enumerate(zip(got, want, strict=True)):
            assert np.array_equal(a, b), f"frame {index} plane {p}: {int((a != b).sum())} bytes differ: {rec}"


# -- what NVENC reads ----------------------------------------------------------------------------


SURFACE_CASES = [("h264", "rgba"), ("h264", "nv12"), ("h264", "yuv420p"), ("h264", "yuv444p"), ("hevc", "nv12"),
                 ("av1", "nv12"), ("av1", "rgba")]  # fmt: skip
for _codec, _fmt in SURFACE_CASES:
    job(f"surfaces-{_codec}-{_fmt}", {"codec": _codec, "pix_fmt": _fmt}, frames=range(6))


@pytest.mark.parametrize("codec, pix_fmt", SURFACE_CASES)
def test_surfaces_nvenc_reads_equal_glrecs_planes(contract, codec, pix_fmt):
    frames = list(range(6))
    result, nvenc, cuda, work = contract(f"surfaces-{codec}-{pix_fmt}")
    assert "error" not in result, result.get("traceback", result.get("error"))
    assert_surfaces_match(work, nvenc, frames, pix_fmt, *SIZE)
    # each registered surface was read through the driver (as on a GPU, where device memory is not host memory)
    reads = {(r["src"], r["size"]) for r in cuda if r["call"] == "cuMemcpyDtoH"}
    for rec in (r for r in nvenc if r["event"] == "encode"):
        assert (rec["surface_ptr"], rec["dump_bytes"]) in reads, rec
    assert sorted(p["pts"] for p in packets(result)) == frames
    # PyNvVideoCodec copies each frame into its own pitched surface: none of glrec's addresses reaches NVENC
    assert not {r["surface_ptr"] for r in nvenc if r["event"] == "encode"} & set(result["slots"].values())


# -- settings --------------------------------------------------------------------------------------

CASES = {
    "defaults: constant quality": ({}, {"preset": 4, "tuning": 1, "rc.rateControlMode": VBR, "rc.targetQuality": 20,
                                        "rc.averageBitRate": 0, "frameIntervalP": 1}),
    "qp": ({"qp": 18}, {"rc.rateControlMode": CONSTQP, "rc.constQP": [18, 18, 18]}),
    "bitrate is vbr": ({"bitrate": 2_000_000}, {"rc.rateControlMode": VBR, "rc.averageBitRate": 2_000_000,
                                                "rc.maxBitRate": 4_000_000}),
    "cbr": ({"bitrate": 3_000_000, "rc": "cbr"}, {"rc.rateControlMode": CBR, "rc.averageBitRate": 3_000_000}),
    "crf is cq": ({"crf": 28}, {"rc.rateControlMode": VBR, "rc.targetQuality": 28, "rc.averageBitRate": 0}),
    "lossless hevc": ({"codec": "hevc", "pix_fmt": "nv12", "tuning": "lossless"},
                      {"tuning": 4, "rc.rateControlMode": CONSTQP, "rc.constQP": [0, 0, 0]}),
    "preset and tuning": ({"preset": "p7", "tuning": "ull"}, {"preset": 7, "tuning": 3}),
    "gop": ({"gop": 30}, {"gopLength": 30, "codec_config.idrPeriod": 30}),
    "fps": ({"fps": 60}, {"frameRateNum": 60, "frameRateDen": 1}),
    "fps 29.97 exactly": ({"fps": 29.97}, {"frameRateNum": 30000, "frameRateDen": 1001}),
    "fps 12.5 exactly": ({"fps": 12.5}, {"frameRateNum": 25, "frameRateDen": 2}),
    "live fps 59.94 exactly": ({"live": True, "fps": 59.94}, {"frameRateNum": 60000, "frameRateDen": 1001}),
    "hevc": ({"codec": "hevc", "pix_fmt": "nv12"}, {"codec": "hevc"}),
    "av1": ({"codec": "av1", "pix_fmt": "nv12"}, {"codec": "av1", "codec_config.colorRange": 0}),
    "live": ({"live": True}, {"preset": 2, "tuning": 3, "rc.rateControlMode": CBR, "rc.averageBitRate": 8_000_000,
                              "rc.maxBitRate": 8_000_000, "rc.vbvBufferSize": 266_667, "rc.enableLookahead": 0,
                              "frameIntervalP": 1, "gopLength": 30, "codec_config.idrPeriod": 30}),
    "live bitrate": ({"live": True, "bitrate": 3_000_000, "preset": "p1"},
                     {"preset": 1, "rc.averageBitRate": 3_000_000, "rc.vbvBufferSize": 100_000}),
    # -x KEY=VALUE reaches CreateEncoder, after (and over) glrec's own settings (issue 21: it was dropped)
    "-x temporalaq gop": ({"encoder_options": ["temporalaq=1", "gop=7"]},
                          {"rc.enableTemporalAQ": 1, "gopLength": 7}),
    "-x aq lookahead": ({"encoder_options": {"aq": "1", "lookahead": "8"}},
                        {"rc.enableAQ": 1, "rc.enableLookahead": 1, "rc.lookaheadDepth": 8}),
}  # fmt: skip


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


for _case, (_options, _) in CASES.items():
    job(f"option-{_case}", _options, frames=[0, 1])


@pytest.mark.parametrize("case", list(CASES))
def test_every_option_reaches_the_nvenc_configuration(contract, case):
    _, expected = CASES[case]
    result, nvenc, _, _ = contract(f"option-{case}")
    assert "error" not in result, result.get("traceback", result.get("error"))
    init = _flat(initialize(nvenc))
    assert {k: init[k] for k in expected} == expected
    assert (init["width"], init["height"]) == tuple(SIZE)
    # glrec's context and stream are the ones NVENC works with.
    opens = [r for r in nvenc if r["event"] == "open"]
    assert opens[-1]["device"] == result["context"] and opens[-1]["device_type"] == 1  # NV_ENC_DEVICE_TYPE_CUDA
    (streams,) = [r for r in nvenc if r["event"] == "set_io_cuda_streams"]
    assert streams["input"] == result["stream"]


COLOUR_CASES = ({"pix_fmt": "rgba"}, {"pix_fmt": "nv12"}, {"codec": "hevc", "pix_fmt": "yuv420p"})
for _options in COLOUR_CASES:
    job(f"colour-{_options['pix_fmt']}", _options, frames=[0])


job("x-unknown", {"encoder_options": {"temporal_aq": "1"}}, frames=[0])
job("x-unknown-plan", kind="plan", options={"size": SIZE, "encoder": "nvenc", "encoder_options": {"nosuch": "1"}})
job("x-unknown-auto", kind="plan", options={"size": SIZE, "encoder_options": {"tune": "film"}})


def test_an_unknown_x_key_is_refused_for_nvenc_not_ignored(contract):
    """PyNvVideoCodec ignores a keyword it does not know: glrec refuses it, naming the valid ones."""
    result, nvenc, _, _ = contract("x-unknown")
    err = result["error"]
    assert err["type"] == "ConfigError" and "NVENC has no keyword 'temporal_aq'" in err["message"], err
    assert "temporalaq" in err["message"] and not [r for r in nvenc if r["event"] == "initialize"]
    err = contract("x-unknown-plan")[0]["error"]
    assert err["type"] == "ConfigError" and "'nosuch'" in err["message"], err
    # auto: an x264 option is NVENC's refusal and the CPU encoder's to apply, and the plan says so
    auto = contract("x-unknown-auto")[0]
    assert auto["encoder"] == "cpu" and "NVENC has no keyword 'tune'" in auto["describe"], auto


def test_colour_is_not_left_to_pynvvideocodec(contract):
    """PyNvVideoCodec's ``colorspace`` sets the full-range flag and no "present" flag: glrec does not send it."""
    for options in COLOUR_CASES:
        result, nvenc, _, _ = contract(f"colour-{options['pix_fmt']}")
        vui = initialize(nvenc)["codec_config"]["vui"]
        assert vui["videoFullRangeFlag"] == 0 and vui["colourMatrix"] == 2 and vui["colourPrimaries"] == 2, vui
        # the packets went through glrec's colour-tag filter whole (the marker survives)
        assert all(p["marker"] is not None for p in packets(result))


def test_av1_packets_are_raw_obus_not_ivf(contract):
    result, _, _, _ = contract("av1-obus")
    heads = [p["head"] for p in packets(result)]
    assert len(heads) == 4 and all(h.startswith("1200") for h in heads), heads  # temporal delimiter, no "DKIF"


job("lossless-h264", {"tuning": "lossless"}, frames=[0])
job("lossless-h264-auto", kind="plan", options={"size": SIZE, "tuning": "lossless"})
job("introspect-lossless", kind="introspect", lossless=True)


def test_h264_lossless_is_refused_because_pynvvideocodec_cannot_ask_for_it(contract):
    # What PyNvVideoCodec 2.2.4 sends for H.264 lossless, whatever keyword glrec could add: the transform
    # bypass flag NVENC's header asks for stays 0 (constant QP 0 alone is not lossless); the High 4:4:4
    # profile comes from 4:4:4 input alone. A version that sets the flag changes this test.
    sent = contract("introspect-lossless")[0]["lossless"]
    assert sent == {"profile": "high444", "bypass": 0}, sent
    result, nvenc, _, _ = contract("lossless-h264")
    err = result["error"]
    assert err["type"] == "ConfigError" and "qpPrimeYZeroTransformBypassFlag" in err["message"], err
    assert "hevc" in err["message"] and "--encoder cpu" in err["message"]
    assert not [r for r in nvenc if r["event"] == "open"]  # refused before any session
    # auto cannot fall back either (the CPU encoders take no NVENC tuning): since issue 35 it refuses in the
    # words of the encoder it would take here, NVENC, whose message names both ways out
    auto = contract("lossless-h264-auto")[0]
    message = auto["error"]["message"]
    assert auto["error"]["type"] == "ConfigError" and "qpPrimeYZeroTransformBypassFlag" in message, auto
    assert "hevc" in message and "--encoder cpu" in message, message


job("bframes", {"bframes": 2}, frames=[0, 1], raw_output=True)
job("av1-obus", {"codec": "av1", "pix_fmt": "nv12"}, frames=[0, 1, 2, 3])


def test_bframes_reach_raw_outputs(contract):
    _, nvenc, _, _ = contract("bframes")
    assert initialize(nvenc)["frameIntervalP"] == 3


# -- timestamps, keyframes, flush --------------------------------------------------------------------


job("skip", {"pix_fmt": "nv12"}, frames=[0, 1, 2, 10, 11])
job("keyframe", {"pix_fmt": "nv12"}, frames=range(10), keyframe_before=[5])
job("flush", {"pix_fmt": "yuv420p"}, frames=range(7))
job("slots", {"pix_fmt": "nv12"}, frames=range(8), slots=2)


def test_pts_are_frame_indices_after_a_skip(contract):
    frames = [0, 1, 2, 10, 11]
    result, nvenc, _, _ = contract("skip")
    assert [p["pts"] for p in packets(result)] == frames
    assert [p["marker"]["picture"] for p in packets(result)] == [0, 1, 2, 3, 4]
    # why glrec keeps the indices itself: PyNvVideoCodec numbers NVENC's inputs 0, 1, 2, 3, 4
    assert [r["inputTimeStamp"] for r in nvenc if r["event"] == "encode"] == [0, 1, 2, 3, 4]


def test_keyframe_request_lands_on_the_next_frame(contract):
    result, nvenc, _, _ = contract("keyframe")
    flags = [r["encodePicFlags"] for r in nvenc if r["event"] == "encode"]
    assert flags == [0, 0, 0, 0, 0, 2, 0, 0, 0, 0]  # NV_ENC_PIC_FLAG_FORCEIDR on frame 5 only
    keys = {p["pts"]: p["keyframe"] for p in packets(result)}
    assert keys == {i: i in (0, 5) for i in range(10)}
    assert all(p["keyframe"] == (p["marker"]["type"] == IDR) for p in packets(result))


def test_flush_returns_every_pending_packet_and_the_output_delay_is_three_frames(contract):
    result, nvenc, _, _ = contract("flush")
    # PyNvVideoCodec 2.2.4 returns each frame's packet three Encode calls later (README, live latency).
    assert [len(c["packets"]) for c in result["calls"]] == [0, 0, 0, 1, 1, 1, 1]
    assert [p["pts"] for p in result["flush"]] == [4, 5, 6]
    assert any(r["event"] == "eos" for r in nvenc)
    assert result["free_slots"] == 3  # every frame's slot went back to the pool


def test_a_slot_is_refilled_only_after_pynvvideocodecs_copy_out_of_it(contract):
    result, _, cuda, _ = contract("slots")
    assert "error" not in result, result.get("traceback")
    slots = sorted(set(result["slots"].values()))
    nbytes = SIZE[0] * SIZE[1] * 3 // 2
    checked = 0
    for i, rec in enumerate(cuda):
        if rec["call"] != "cuMemcpy2DAsync" or not any(s <= rec["src"] < s + nbytes for s in slots):
            continue
        slot = next(s for s in slots if s <= rec["src"] < s + nbytes)
        later = cuda[i + 1 :]
        refill = next((j for j, r in enumerate(later) if r["call"] == "cuMemcpyHtoD" and r["dst"] == slot), None)
        if refill is None:
            continue
        # the event must be recorded behind this copy at once (before the producer fills anything), not be
        # some later fill's event that happens to follow it on the same stream
        next_fill = next(j for j, r in enumerate(later) if r["call"] == "cuMemcpyHtoD")
        recorded = [r for r in later[:next_fill] if r["call"] == "cuEventRecord" and r["stream"] == rec["stream"]]
        assert recorded, f"no event recorded behind the copy out of slot {slot:#x} before the next fill"
        assert any(r["call"] == "cuEventSynchronize" and r["event"] == recorded[0]["event"] for r in later[:refill]), (
            f"slot {slot:#x} refilled without waiting for the event behind PyNvVideoCodec's copy out of it"
        )
        checked += 1
    assert checked >= 6  # 8 frames in 2 slots: every refill after the first two was checked


# -- devices, sessions and errors --------------------------------------------------------------------


def test_the_gpu_is_chosen_with_gpu_id(tmp_path, fake_libs):
    result, nvenc, _ = encode(tmp_path, fake_libs, {}, frames=[0, 1, 2, 3], device=1,
                              env={"GLREC_FAKE_CUDA_DEVICES": "2"})  # fmt: skip
    assert "error" not in result, result["error"]  # with gpuid, PyNvVideoCodec said "Gpu id 0 doesnt match ..."
    assert [r["device"] for r in nvenc if r["event"] == "open"][-1] == result["context"]
    assert len(packets(result)) == 4


job("introspect", kind="introspect")


def test_gpu_id_is_the_keyword_the_module_checks(contract):
    got = contract("introspect")[0]
    assert got["gpu_id"] is not None and "out of range" in got["gpu_id"]
    assert got["gpuid"] is None  # CreateEncoder ignores it: the GPU stays 0


job("surface-read-fails", {}, frames=[0, 1], env={"GLREC_FAKE_CUDA_DTOH_STATUS": "700"})


def test_a_surface_the_stand_in_cannot_read_fails_the_picture_and_says_why(contract):
    result, nvenc, _, _ = contract("surface-read-fails")
    assert result["error"]["type"] == "EncoderError" and "frame 0" in result["error"]["message"], result
    (failure,) = read_failures(nvenc)
    assert failure["picture"] == 0 and "cuMemcpyDtoH returned 700 (CUDA_ERROR_ILLEGAL_ADDRESS)" in failure["why"]
    assert not [r for r in nvenc if r["event"] == "encode"]  # no picture counts as encoded


ERROR_CASES = [
        ({"GLREC_FAKE_NVENC_OPEN_STATUS": "2"}, "EncoderUnavailableError", ["NV_ENC_ERR_UNSUPPORTED_DEVICE (2)",
                                                                            "--encoder cpu"]),
        ({"GLREC_FAKE_NVENC_MAX_SESSIONS": "0"}, "EncoderUnavailableError", ["NV_ENC_ERR_OUT_OF_MEMORY (10)",
                                                                             "consumer GPUs (GeForce)", "sessions"]),
        ({"GLREC_FAKE_NVENC_INIT_STATUS": "8"}, "EncoderError", ["NVENC could not open a session"]),
]  # fmt: skip
for _i, (_env, _, _) in enumerate(ERROR_CASES):
    job(f"error-{_i}", {}, frames=[0], env=_env)


@pytest.mark.parametrize("i", range(len(ERROR_CASES)))
def test_session_failures_become_clear_glrec_errors(contract, i):
    _, cls, words = ERROR_CASES[i]
    result, _, _, _ = contract(f"error-{i}")
    err = result["error"]
    assert err["type"] == cls and "GlrecError" in err["mro"] and "RuntimeError" in err["mro"], err
    for w in words:
        assert w in err["message"], err["message"]
    assert "\n" not in err["message"]


job(
    "probe",
    kind="probe",
    steps=[{"env": {"GLREC_FAKE_NVENC_OPEN_STATUS": "10"}}, {"env": {"GLREC_FAKE_NVENC_OPEN_STATUS": None}}, {}],
)


def test_the_probe_opens_one_session_and_forgets_failures(contract):
    got, nvenc, _, _ = contract("probe")
    assert "NV_ENC_ERR_OUT_OF_MEMORY" in got["problems"][0]
    assert got["problems"][1:] == [None, None]  # the transient failure was not kept; the success was
    assert [r["event"] for r in nvenc if r["event"] in ("open", "destroy")] == ["open", "open", "destroy"]


job(
    "probe-permanent",
    kind="probe",
    steps=[{"env": {"GLREC_FAKE_NVENC_OPEN_STATUS": "2"}}, {"env": {"GLREC_FAKE_NVENC_OPEN_STATUS": None}}, {}],
)


def test_a_gpu_without_nvenc_is_probed_once(contract):
    # Each failed session leaks PyNvVideoCodec's CUDA context (16 device files on an H200): probe such a GPU once.
    got, nvenc, _, _ = contract("probe-permanent")
    assert all("NV_ENC_ERR_UNSUPPORTED_DEVICE" in p for p in got["problems"]), got["problems"]
    assert [r["event"] for r in nvenc if r["event"] in ("open", "destroy")] == ["open"]


for _size in ([64, 64], [128, 96]):
    job(
        f"min-size-{_size[0]}",
        kind="plan",
        options={"size": _size, "encoder": "nvenc"},
        env={"GLREC_FAKE_NVENC_MIN_SIZE": "128x96"},
    )


job("min-size-auto", kind="plan", options={"size": [64, 64]}, env={"GLREC_FAKE_NVENC_MIN_SIZE": "128x96"})


def test_the_minimum_size_comes_from_the_encoders_caps(contract):
    got = contract("min-size-64")[0]
    assert got["error"]["type"] == "ConfigError"
    assert "below this GPU's NVENC h264 minimum of 128x96" in got["error"]["message"]
    assert contract("min-size-128")[0]["encoder"] == "nvenc"
    auto = contract("min-size-auto")[0]  # auto takes the CPU encoder instead, and says why
    assert auto["encoder"] == "cpu" and "minimum of 128x96" in auto["describe"], auto


for _enc in ("auto", "nvenc"):
    job(f"open-limit-{_enc}", kind="open", options={"size": SIZE, "encoder": _enc},
        open_env={"GLREC_FAKE_NVENC_OPEN_STATUS": "10"})  # fmt: skip


def test_auto_falls_back_when_the_encoder_it_chose_cannot_open(contract):
    """Issue 24 item 1: the probe succeeded (cached), then the session limit is reached before CreateEncoder."""
    auto = contract("open-limit-auto")[0]
    assert "error" not in auto, auto
    assert auto["planned"] == "nvenc" and auto["encoder"] == "cpu" and auto["name"] == "libx264", auto
    (reason,) = [r for r in auto["fallbacks"] if "could not open" in r]
    assert reason.startswith("NVENC could not open") and "NV_ENC_ERR_OUT_OF_MEMORY" in reason, auto
    assert "NV_ENC_ERR_OUT_OF_MEMORY" in auto["describe"], auto
    explicit = contract("open-limit-nvenc")[0]  # an explicit choice keeps its clear error
    assert explicit["planned"] == "nvenc" and explicit["error"]["type"] == "EncoderUnavailableError", explicit
    assert "NV_ENC_ERR_OUT_OF_MEMORY" in explicit["error"]["message"]


# Issue 30 item 10: the consumer-GPU session limit (the stand-in's MAX_SESSIONS: one more session gets
# NV_ENC_ERR_OUT_OF_MEMORY) reached after a cached successful probe, with the encoder left to auto but the
# handoff chosen: auto fell back only where nothing at all was chosen.
LIMIT = {"GLREC_FAKE_NVENC_MAX_SESSIONS": "0"}
job("limit-register-auto", kind="open", options={"size": SIZE}, pipeline={"handoff": "register"}, open_env=LIMIT)
job("limit-register-nvenc", kind="open", options={"size": SIZE, "encoder": "nvenc"}, pipeline={"handoff": "register"},
    open_env=LIMIT)  # fmt: skip
job("limit-auto", kind="open", options={"size": SIZE}, open_env=LIMIT)


def test_auto_falls_back_at_the_session_limit_also_on_a_chosen_handoff(contract):
    for name in ("limit-register-auto", "limit-auto"):
        got = contract(name)[0]
        assert "error" not in got, got
        assert got["planned"] == "nvenc" and got["encoder"] == "cpu" and got["name"] == "libx264", got
        (reason,) = [r for r in got["fallbacks"] if "could not open" in r]
        assert "NV_ENC_ERR_OUT_OF_MEMORY" in reason and "consumer GPUs" in reason, got
        assert "NV_ENC_ERR_OUT_OF_MEMORY" in got["describe"], got  # what the summary's "auto:" part is made of
        assert any("NV_ENC_ERR_OUT_OF_MEMORY" in line and "auto tries the next encoder" in line for line in got["log"])
    # the chosen handoff is kept: the CPU encoder is fed from CUDA device frames through it
    got = contract("limit-register-auto")[0]
    assert got["handoff"] == "register" and got["device"] == 0, got
    explicit = contract("limit-register-nvenc")[0]  # a chosen encoder keeps its clear error
    assert explicit["planned"] == "nvenc" and explicit["error"]["type"] == "EncoderUnavailableError", explicit
    assert "NV_ENC_ERR_OUT_OF_MEMORY" in explicit["error"]["message"]


@pytest.fixture(scope="session")
def cuda_only_libs(tmp_path_factory, fake_libs):
    """The stand-in libcuda without any libnvidia-encode.so.1: ``import PyNvVideoCodec`` raises RuntimeError."""
    return build(tmp_path_factory.mktemp("cuda-only"), ("cuda",))


def test_auto_info_and_explicit_nvenc_without_the_nvenc_library(tmp_path, cuda_only_libs):
    auto = run_child({"kind": "plan", "options": {"size": [64, 64]}}, cuda_only_libs, tmp_path)
    assert auto["encoder"] == "cpu" and "PyNvVideoCodec cannot load" in auto["describe"], auto
    explicit = run_child({"kind": "plan", "options": {"size": [64, 64], "encoder": "nvenc"}}, cuda_only_libs, tmp_path)
    assert explicit["error"]["type"] == "EncoderUnavailableError"
    assert "libnvidia-encode.so.1" in explicit["error"]["message"] and "--encoder cpu" in explicit["error"]["message"]
    assert ".." not in explicit["error"]["message"], explicit["error"]["message"]  # one full stop
    lines = run_child({"kind": "info"}, cuda_only_libs, tmp_path)["lines"]
    assert any(line.strip().startswith("nvenc h264: unavailable: PyNvVideoCodec cannot load") for line in lines), lines


def test_doctor_require_nvenc_fails_without_cuda_and_says_why(tmp_path):
    from glrec.cuda.driver import cuda_problem

    if cuda_problem() is None:
        pytest.skip("CUDA works here; this checks a machine without it")
    done = subprocess.run([sys.executable, "-m", "glrec", "doctor", "--require", "nvenc"], capture_output=True,
                          text=True, cwd=tmp_path, env=child_env(),
                          timeout=300)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("NVENC")]
    assert "FAIL" in line and "CUDA" in line, done.stdout


# -- GPU tier: real libcuda, stand-in NVENC, glrec's real GL -> CUDA handoffs -------------------------


@pytest.fixture(scope="session")
def nvenc_only_libs(tmp_path_factory):
    return nvenc_only(tmp_path_factory)


@pytest.mark.gpu
@pytest.mark.parametrize("handoff", ["register", "shared"])
@pytest.mark.parametrize("pix_fmt", ["rgba", "nv12", "yuv420p", "yuv444p"])
def test_gpu_surfaces_equal_glreadpixels_through_the_handoffs(tmp_path, nvenc_only_libs, handoff, pix_fmt):
    opts = {"size": [320, 240], "fps": 30, "encoder": "nvenc", "pix_fmt": pix_fmt}
    result = run_child({"kind": "gl_encode", "options": opts, "handoff": handoff, "count": 7}, nvenc_only_libs,
                       tmp_path)  # fmt: skip
    nvenc = records(tmp_path / "nvenc.jsonl")
    assert "error" not in result, (result, read_failures(nvenc))
    assert_surfaces_match(tmp_path, nvenc, list(range(7)), pix_fmt, 320, 240)
    assert [p["pts"] for p in packets(result)] == list(range(7))
    refs = {(tmp_path / "inputs" / f"frame_{i}.bin").read_bytes() for i in range(7)}
    assert len(refs) > 1, "the scene must change between frames for the check to mean anything"


@pytest.mark.gpu
def test_gpu_real_module_takes_gpu_id(tmp_path, nvenc_only_libs):
    got = run_child({"kind": "introspect"}, nvenc_only_libs, tmp_path)
    assert "out of range" in (got["gpu_id"] or "") and got["gpuid"] is None, got


@pytest.mark.gpu
@pytest.mark.parametrize("handoff", ["auto", "register"])
def test_gpu_a_recording_falls_back_at_the_session_limit(tmp_path, nvenc_only_libs, handoff):
    """Issue 30 item 10 end to end: the probe's success cached, then the session limit; the file decodes whole."""
    import av

    opts = {"size": [320, 240], "fps": 30, "handoff": handoff}
    got = run_child({"kind": "record", "options": opts, "frames": 20, "open_env": LIMIT}, nvenc_only_libs, tmp_path)
    assert "error" not in got, got
    assert got["planned"] == "nvenc" and got["encoder"].startswith("libx264"), got
    assert "NV_ENC_ERR_OUT_OF_MEMORY" in got["fallback"] and "NV_ENC_ERR_OUT_OF_MEMORY" in got["summary"], got
    with av.open(got["path"]) as container:
        assert sum(1 for _ in container.decode(video=0)) == got["frames"] == 20
