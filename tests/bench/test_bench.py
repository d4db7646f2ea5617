"""`glrec bench`: the quick run's JSON is complete and its numbers agree with each other."""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path

import pytest
from where import ROOT

from glrec.bench.analysis import X264_THREADING, analyse
from glrec.bench.meter import STAGES
from glrec.bench.report import table
from glrec.cli import main

ROW_KEYS = {"row", "scene", "size", "frames", "status", "seconds", "fps", "cpu_seconds", "cpu_use", "peak_rss_mb"}


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One `glrec bench --quick` run, shared by the tests below (it takes a few seconds)."""
    from conftest import gl_problem

    if gl_problem() is not None:
        pytest.skip(f"needs an EGL OpenGL 4.3 context: {gl_problem()}")
    pytest.importorskip("imageio_ffmpeg", reason="baseline (a) needs imageio-ffmpeg: pip install '.[test]'")
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "quick.json"
    code = main(["bench", "--quick", "-q", "--no-plot", "--json", str(out), "--keep-outputs", str(tmp / "videos")])
    assert code == 0
    return json.loads(out.read_text()), tmp / "videos"


def test_quick_has_every_section(quick):
    doc, _ = quick
    assert doc["schema"] == "glrec-bench/1"
    for key in ("created", "name", "machine", "versions", "gl", "config", "rows", "summary", "efficiency", "memory"):
        assert doc[key], key
    assert doc["machine"]["cores_usable"] >= 1 and doc["machine"]["cpu"]
    for key in ("glrec", "pyav", "moderngl", "ffmpeg_libs", "imageio_ffmpeg_exe"):
        assert doc["versions"][key], key
    assert "libavcodec" in doc["versions"]["ffmpeg_libs"]
    assert doc["gl"]["renderer"] and doc["gl"]["stage_clock"] in ("query", "finish")
    assert doc["idle_rss_mb"] > 0
    rows = {r["row"] for r in doc["rows"]}
    assert {"naive-imageio", "naive-pyav", "glrec:cpu", "glrec-profiled:cpu"} <= rows
    assert {"stage:render", "stage:handoff:cpu", "stage:encode-cpu"} <= rows


def test_rows_are_self_consistent(quick):
    doc, _ = quick
    cores = doc["machine"]["cores_usable"]
    for r in doc["rows"]:
        assert r["status"] == "ok", r
        assert set(r) >= ROW_KEYS, r["row"]
        assert r["frames_timed"] == r["frames"] > 0
        assert r["seconds"] > 0 and math.isclose(r["fps"], r["frames"] / r["seconds"], rel_tol=1e-9)
        assert 0 <= r["cpu_use"] <= cores + 0.5 and math.isclose(r["cpu_use"], r["cpu_seconds"] / r["seconds"])
        assert r["peak_rss_mb"] > 10
        if "frames_written" in r:  # every frame in, every frame out (demuxed from the file)
            assert r["frames_written"] == r["frames"], r["row"]
        per_frame_ms = 1e3 * r["seconds"] / r["frames"]
        stages = r["stages_ms"]
        if r["row"].startswith("naive-"):
            # one thread does everything in turn: the stages add up to the loop, give or take the loop itself
            assert 0.7 * per_frame_ms <= sum(stages.values()) <= per_frame_ms * 1.001, (r["row"], stages)
        if r["row"] == "glrec-profiled:cpu":
            assert set(STAGES) <= set(stages) and all(v > 0 for v in stages.values()), stages
            # render, convert and readback run in turn on the GL thread; encode and mux on the worker
            assert stages["render"] + stages["convert"] + stages["readback"] <= per_frame_ms * 1.001
            assert stages["encode"] + stages["mux"] <= per_frame_ms * 1.001


def test_outputs_decode_to_every_frame(quick, ffprobe):
    _, videos = quick
    files = sorted(videos.glob("*.mp4"))
    assert {f.name.split("_")[0] for f in files} >= {"naive-imageio", "naive-pyav", "glrec-cpu", "stage-encode-cpu"}
    for f in files:
        n = 5 if "_5_" in f.name else 50 if "_50_" in f.name else 10
        info = ffprobe(f, "nb_read_frames", "width", "height", "codec_name")
        assert (info["codec_name"], info["width"], info["height"]) == ("h264", "320", "180"), f.name
        assert int(info["nb_read_frames"]) == n, f.name


def test_summary_ratios_and_equal_x264_settings(quick):
    doc, _ = quick
    by_row = {s["row"]: s for s in doc["summary"]}
    naive = by_row["naive-imageio"]
    for s in doc["summary"]:
        assert s["fps"] == statistics.median(s["fps_samples"])
        assert s["cpu_ms_per_frame"] > 0
        assert math.isclose(s["x_naive_imageio"], s["fps"] / naive["fps"])
        assert math.isclose(s["x_naive_pyav"], s["fps"] / by_row["naive-pyav"]["fps"])
        assert s["reference"] == "naive-imageio" and s["x_reference"] == s["x_naive_imageio"]
    assert naive["x_naive_imageio"] == 1.0
    glrec = by_row["glrec:cpu"]
    assert glrec["stage_source"].startswith("glrec-profiled:cpu")
    # Equal encoder settings: every x264 option in the streams equal, threading included: glrec runs
    # x264 with frame threads, as the ffmpeg command line does (glrec/encoders/cpu.py).
    assert glrec["x264"]["options"]["crf"] == naive["x264"]["options"]["crf"] == "20.0"
    assert glrec["x264"]["options"]["sliced_threads"] == naive["x264"]["options"]["sliced_threads"] == "0"
    assert glrec["x264_differs_from_naive"] == {} and glrec["x264_equal_settings"] is True
    # naive-pyav is what PyAV users get by default: slice threads, and the check says so.
    pyav = by_row["naive-pyav"]
    assert pyav["x264"]["options"]["sliced_threads"] == "1"
    assert pyav["x264_equal_settings"] is False and "sliced_threads" in pyav["x264_differs_from_naive"]
    assert set(pyav["x264_differs_from_naive"]) <= X264_THREADING, pyav["x264_differs_from_naive"]


def test_efficiency_memory_and_targets(quick):
    doc, _ = quick
    fps = {s["row"]: s["fps"] for s in doc["summary"]}
    (eff,) = doc["efficiency"]
    slowest = min(fps["stage:handoff:cpu"], fps["stage:encode-cpu"])
    assert math.isclose(eff["efficiency"], fps["glrec:cpu"] / slowest)
    cpu_ms = {s["row"]: s["cpu_ms_per_frame"] for s in doc["summary"]}
    floor = cpu_ms["stage:render"] + cpu_ms["stage:encode-cpu"]
    assert math.isclose(eff["ceiling_x_naive"], cpu_ms["naive-imageio"] / floor)
    assert eff["stage_fps"][eff["slowest_stage"]] == slowest
    mem = doc["memory"]
    assert (mem["frames_n"], mem["frames_10n"]) == (5, 50)
    assert (mem["frames_written_n"], mem["frames_written_10n"]) == (5, 50)
    assert math.isclose(mem["ratio"], mem["peak_rss_mb_10n"] / mem["peak_rss_mb_n"])
    goals = {t["target"]: t for t in doc["targets"]}
    assert len(goals) == 2
    for t in goals.values():
        assert t["met"] == (t["measured"] <= t["goal"] if t.get("at_most") else t["measured"] >= t["goal"])


def test_table_and_replot(quick, tmp_path, capsys):
    doc, _ = quick
    text = table(doc)
    for word in ("naive-imageio", "glrec:cpu", "stage:encode-cpu", "efficiency", "memory", "target"):
        assert word in text
    saved = tmp_path / "r.json"
    saved.write_text(json.dumps(doc))
    assert main(["bench", "--replot", str(saved), "--no-plot"]) == 0
    assert "glrec:cpu" in capsys.readouterr().out


def test_plot_is_a_png(quick, tmp_path):
    pytest.importorskip("matplotlib", reason="the plot needs matplotlib: pip install '.[bench]'")
    from glrec.bench.report import plot

    doc, _ = quick
    path = plot(doc, tmp_path / "p.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


@pytest.mark.parametrize(
    "args, words",
    [
        (["--sizes", "641x480"], "must be positive and even"),
        (["--backends", "quantum"], "Unknown backend 'quantum'"),
        (["--scenes", "teapot"], "Unknown scene 'teapot'"),
        (["--baselines", "ffmpeg-cli"], "Unknown baseline 'ffmpeg-cli'"),
        (["--repeat", "0"], "repeat 0 must be at least 1"),
    ],
)
def test_bad_options_exit_2(args, words, capsys, tmp_path):
    assert main(["bench", "--out", str(tmp_path), *args]) == 2
    assert words in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "name, options, word",
    [
        ("glrec:nvenc", {"encoder": "nvenc", "codec": "h264"}, "nvenc"),
        ("glrec:cpu-cuda", {"encoder": "cpu", "codec": "h264", "handoff": "register"}, "handoff"),
    ],
)
def test_unavailable_backend_is_skipped_with_its_reason(gl, tmp_path, name, options, word):
    from glrec.bench.runner import run_isolated
    from glrec.bench.spec import RowSpec

    spec = RowSpec(name, size=(64, 64), frames=2, backend=name.split(":")[1], options=options, workdir=str(tmp_path))
    r = run_isolated(spec)
    if r["status"] == "ok":  # a machine with this backend: then it must have recorded every frame
        assert r["frames_written"] == 2
    else:
        assert r["status"] == "skipped" and word in r["reason"].lower(), r


def test_analysis_of_known_rows():
    def row(name, fps, cpu_ms=10.0, **extra):
        return {"row": name, "scene": "s", "size": "8x8", "frames": 10, "status": "ok", "fps": fps, "cpu_use": 1.0,
                "cpu_seconds": cpu_ms / 100, "peak_rss_mb": 100.0, "child_peak_rss_mb": 0.0, "stages_ms": {},
                "backend": extra.pop("backend", None), **extra}  # fmt: skip

    rows = [
        row("naive-imageio", 10.0, 24.0), row("glrec:cpu", 14.0, backend="cpu"), row("naive-pyav", 11.0),
        row("naive-imageio", 12.0, 24.0), row("glrec:cpu", 18.0, backend="cpu"), row("naive-pyav", 11.0),
        row("stage:render", 100.0, 4.0), row("stage:handoff:cpu", 40.0), row("stage:encode-cpu", 20.0, 16.0),
        {**row("glrec:cpu", 1, backend="cpu"), "frames": 5, "peak_rss_mb": 200.0, "memory_check": True},
        {**row("glrec:cpu", 1, backend="cpu"), "frames": 50, "peak_rss_mb": 230.0, "memory_check": True},
    ]  # fmt: skip
    doc = analyse({"rows": rows})
    s = {x["row"]: x for x in doc["summary"]}
    assert s["glrec:cpu"]["fps"] == 16.0 and s["naive-imageio"]["fps"] == 11.0
    assert math.isclose(s["glrec:cpu"]["x_naive_imageio"], 16 / 11)
    assert math.isclose(s["naive-imageio"]["cpu_ms_per_frame"], 24.0)
    (eff,) = doc["efficiency"]
    assert eff["slowest_stage"] == "stage:encode-cpu" and math.isclose(eff["efficiency"], 0.8)
    assert math.isclose(eff["serial_fps"], 1 / (1 / 40 + 1 / 20))
    # 24 ms of CPU per naive frame over 4 + 16 ms that rendering and encoding alone need
    assert math.isclose(eff["ceiling_x_naive"], 24 / 20)
    assert math.isclose(doc["memory"]["ratio"], 1.15)
    met = {t["target"].split()[0]: t["met"] for t in doc["targets"]}
    assert met == {"glrec:cpu": False, "peak": False}


def test_time_stages_times_every_stage_of_a_real_recording(gl, tmp_path):
    """The bench's seam into the recorder is public (Recorder.time_stages), not private attributes."""
    import contextlib
    import functools
    from collections import Counter

    import av

    import glrec

    calls: Counter[str] = Counter()

    @contextlib.contextmanager
    def timer(name):
        calls[name] += 1
        yield

    path = tmp_path / "timed.mp4"
    with glrec.Recorder(path, size=(64, 64), fps=30) as rec:
        rec.time_stages({n: functools.partial(timer, n) for n in ("convert", "handoff", "encode", "mux")})
        for _ in range(5):
            rec.render("bars")
    assert calls["convert"] == 5  # one run() a frame
    assert calls["handoff"] == 5 + 1  # one submit() a frame, one drain() at close
    assert calls["encode"] == 5 + 1  # one encode() a frame, one flush()
    assert calls["mux"] >= 2  # write() calls and the close()
    with av.open(str(path)) as c:
        assert sum(1 for _ in c.decode(video=0)) == 5
    with glrec.Recorder(tmp_path / "late.mp4", size=(64, 64), fps=30) as late:
        late.render("bars")
        with pytest.raises(glrec.GlrecError, match="before the first frame"):
            late.time_stages({})


def test_help_explains_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = capsys.readouterr().out
    for option in ("--quick", "--sizes", "--backends", "--repeat", "--memory-frames", "--preset", "--crf", "--replot"):
        assert option in text
    assert "naive-imageio" in text and "ratio" in text


def test_default_results_folder_is_the_users_data_folder_wherever_glrec_runs(tmp_path):
    from glrec.cli.bench import default_out

    out, why = default_out({"XDG_DATA_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")})
    assert out == tmp_path / "xdg" / "glrec" / "bench" and out.is_dir() and "XDG_DATA_HOME" in why
    # a relative XDG_DATA_HOME is to be ignored (XDG base directory rule): ~/.local/share
    out, _ = default_out({"XDG_DATA_HOME": "rel", "HOME": str(tmp_path / "home")})
    assert out == tmp_path / "home" / ".local" / "share" / "glrec" / "bench" and out.is_dir()
    assert ROOT not in out.parents  # not the source tree this glrec was imported from


@pytest.mark.slow
def test_an_installed_glrec_never_writes_into_the_current_directory(tmp_path):
    """glrec copied as an installed package (shaders inside), run from a folder that has benchmarks/results."""
    import shutil
    import subprocess
    import sys

    site = tmp_path / "site"
    shutil.copytree(ROOT / "glrec", site / "glrec", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "shaders", site / "glrec" / "shaders")
    work = tmp_path / "work"
    (work / "benchmarks" / "results").mkdir(parents=True)
    args = ["bench", "--quick", "--baselines", "none", "--no-stages", "--no-profile", "--memory-frames", "0",
            "--no-plot"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_DATA_HOME": str(tmp_path / "data")}
    p = subprocess.run([sys.executable, "-m", "glrec", *args], cwd=work, env=env, capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    assert list((work / "benchmarks" / "results").iterdir()) == []
    assert not [x for x in work.rglob("*.json")]
    line = next(x for x in p.stdout.splitlines() if x.startswith("results: "))
    saved = Path(line.split(": ", 1)[1])
    assert saved.is_file() and saved.parent == tmp_path / "data" / "glrec" / "bench"
    assert f"results folder: {saved.parent}" in p.stderr


def test_stages_that_take_turns_are_held_to_their_serial_bound():
    """nvJPEG's stages take turns with GL on one GPU, so its efficiency is e2e over the serial bound."""
    from glrec.bench.analysis import efficiency

    rows = [("glrec:nvjpeg", 800.0, "nvjpeg"), ("stage:handoff:nvjpeg", 2000.0, None),
            ("stage:encode-nvjpeg", 4000.0, None), ("glrec:cpu", 100.0, "cpu"), ("stage:handoff:cpu", 400.0, None),
            ("stage:encode-cpu", 200.0, None)]  # fmt: skip
    summary = [{"group": "g", "row": r, "fps": f, "backend": b, "cpu_ms_per_frame": 1.0} for r, f, b in rows]
    got = {e["backend"]: e for e in efficiency(summary)}
    serial = 1 / (1 / 2000 + 1 / 4000)
    assert math.isclose(got["nvjpeg"]["efficiency"], 800 / serial) and got["nvjpeg"]["bound"] == "serial"
    assert math.isclose(got["cpu"]["efficiency"], 100 / 200) and got["cpu"]["bound"] == "slowest"


def test_the_nvjpeg_stage_row_muxes_on_the_encode_worker_as_a_recording_does(tmp_path):
    """``stage:encode-nvjpeg`` encodes on the calling thread and muxes on glrec's encode worker; with a stand-in
    encoder (JPEGs made by Pillow on the host) the file holds every frame in order and both stages are timed."""
    import io
    import itertools
    import threading

    import av
    import numpy as np
    from PIL import Image

    from glrec.bench.gpu_stages import _encode_in_turns
    from glrec.bench.meter import StageClock
    from glrec.frame import Packet
    from glrec.options import VideoOptions
    from glrec.sinks import open_sink

    class JpegOnHost:
        def __init__(self):
            self.threads, self.closed = set(), False

        def encode(self, frame):
            self.threads.add(threading.current_thread().name)
            buf = io.BytesIO()
            Image.fromarray(np.full((48, 64, 3), 10 * frame, np.uint8)).save(buf, "JPEG", quality=95)
            return [Packet(buf.getvalue(), frame, frame, True)]

        def flush(self):
            return []

        def close(self):
            self.closed = True

    options = VideoOptions.create((64, 48), 30.0, codec="mjpeg")
    sink = open_sink(tmp_path / "s.mkv", options.facts, overwrite=True)
    encoder, clock = JpegOnHost(), StageClock()
    _encode_in_turns(encoder, sink, range(20), clock)
    assert encoder.threads == {threading.current_thread().name} and encoder.closed
    assert set(clock.seconds) == {"encode", "mux"}
    with av.open(str(tmp_path / "s.mkv")) as c:
        levels = [float(f.to_ndarray(format="gray").mean()) for f in c.decode(video=0)]
    assert len(levels) == 20 and all(abs(a - b) > 5 for a, b in itertools.pairwise(levels))
    assert levels == sorted(levels)


@pytest.mark.parametrize(
    "backend, stages",
    [
        ("nvjpeg", {"stage:handoff:nvjpeg": 3673.5, "stage:encode-nvjpeg": 4160.6}),  # the H200's, 2026-12-04
        ("cpu", {"stage:handoff:cpu": 400.0, "stage:encode-cpu": 250.0}),
    ],
)
def test_the_efficiency_line_divides_the_figures_it_names(backend, stages):
    import re

    from glrec.bench.analysis import efficiency
    from glrec.bench.report import summary_lines

    group = "plasma 1920x1080"
    summary = [{"group": group, "row": f"glrec:{backend}", "backend": backend, "fps": 1821.1, "cpu_ms_per_frame": 1.0}]
    summary += [{"group": group, "row": name, "fps": fps} for name, fps in stages.items()]
    eff = efficiency(summary)
    line = next(x for x in summary_lines({"efficiency": eff}) if x.startswith("efficiency"))
    end_to_end, over, shown = re.search(r": ([\d.]+) fps end to end / ([\d.]+) fps .*?= ([\d.]+);", line).groups()
    assert float(end_to_end) / float(over) == pytest.approx(float(shown), abs=0.006), line
    assert float(shown) == pytest.approx(eff[0]["efficiency"], abs=0.006)
    serial = 1 / sum(1 / v for v in stages.values())
    assert float(over) == pytest.approx(serial if backend == "nvjpeg" else min(stages.values()), abs=0.06), line
