"""What a new user meets on the command line (issue 35): each test runs the real command and reads what they see.

Outputs are checked with independent readers (PyAV, Pillow, tarfile, git), messages as the user reads them.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile

import av
import numpy as np
import pytest
from crash_helpers import child_env
from media import free_port
from PIL import Image
from where import ROOT

import glrec
from glrec.cli import main
from glrec.diagnostics.common import psnr, reference_rgb
from glrec.encoders.registry import ENCODERS
from glrec.pipeline import plan as select

NO_DRIVER = "the NVIDIA driver (libcuda.so.1) is not installed"


@pytest.fixture
def cpu_only(monkeypatch):
    """A machine without NVIDIA's driver, as most CPU machines are (here whatever this one has)."""
    monkeypatch.setattr(select, "_open_cuda", lambda ordinal: (None, NO_DRIVER))


def _frames(path):
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def _luma(rgb):
    return rgb.astype(np.float64) @ [0.299, 0.587, 0.114]


def _help(*command: str) -> str:
    done = subprocess.run([sys.executable, "-m", "glrec", *command, "--help"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=child_env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- 1. the GL JPEG encoder, visible where the others are ------------------------------------------------


def test_the_gl_encoder_is_named_as_it_is_typed(gl, tmp_path, capsys):
    from glrec.diagnostics import info_lines

    assert any(line.strip().startswith("gl (GL-compute JPEG): mjpeg") for line in info_lines())
    out = tmp_path / "g_%03d.jpg"
    assert main(["record", "bars", "-o", str(out), "--size", "64x48", "--frames", "3", "--encoder", "gl"]) == 0
    summary = capsys.readouterr().out.strip()
    assert summary.endswith("encoder gl (GL-compute JPEG)"), summary  # what --encoder takes, then what it is
    files = sorted(tmp_path.glob("g_*.jpg"))
    assert [Image.open(f).size for f in files] == [(64, 48)] * 3


def test_the_readme_lists_every_encoder_where_it_lists_them():
    # the README's sections are the site's guides now (docs/guides/): recording, outputs and encoders, datasets
    text = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs" / "guides").glob("*.md"))])
    listed = re.search(r"`--encoder (auto\|[a-z|_]+)`", text)
    assert listed is not None and set(listed.group(1).split("|")) == {"auto", *ENCODERS}, listed
    jpg_row = next(line for line in text.splitlines() if line.startswith("| `name_%06d.jpg`"))
    assert "GL JPEG" in jpg_row and "nvJPEG" in jpg_row
    assert 'rgb_encoder = "gl"' in text


# -- 2. a CPU-only machine: no CUDA noise ------------------------------------------------------------------


def test_a_cpu_only_summary_says_why_in_a_few_words(gl, cpu_only, tmp_path, capsys):
    out = tmp_path / "s.mp4"
    assert main(["record", "bars", "-o", str(out), "--size", "64x48", "--frames", "3"]) == 0
    summary = capsys.readouterr().out.strip()
    assert summary.endswith("encoder libx264 (no NVIDIA GPU)") and len(summary.split(": ", 1)[1]) < 110, summary
    assert len(_frames(out)) == 3
    result = glrec.record("bars", tmp_path / "r.mp4", size=(64, 48), fps=30, frames=2)
    assert result.fallback == "no NVIDIA GPU"
    assert result.fallback_reasons == (f"no CUDA: {NO_DRIVER}",)  # the full words stay on the result


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--preset", "fastest"], "Unknown preset for libx264 'fastest'. Valid: fast, faster,"),
        (["--quality", "80"], "--quality 80 is JPEG quality (codec mjpeg); h264 takes --crf"),
    ],
)
def test_auto_refuses_in_the_words_of_the_encoder_it_would_take(cpu_only, tmp_path, capsys, flags, words):
    out = tmp_path / "x.mp4"
    assert main(["record", "bars", "-o", str(out), "--size", "64x48", "--frames", "2", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and err.startswith("glrec: error: " + words), err
    assert not any(other in err for other in ("CUDA", "NVENC", "nvJPEG", "libcuda")), err
    assert not out.exists()


def _fake_cuda_python(monkeypatch, *, installed: bool):
    """cuda-python as it is without NVIDIA's driver (its cuInit raises), or not installed at all."""
    import sys
    import types

    if installed:
        fake = types.ModuleType("cuda.bindings.driver")

        def cu_init(flags):
            raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search.')

        fake.cuInit = cu_init  # type: ignore[attr-defined]
        bindings = types.ModuleType("cuda.bindings")
        bindings.driver = fake  # type: ignore[attr-defined]
        modules = {"cuda": types.ModuleType("cuda"), "cuda.bindings": bindings, "cuda.bindings.driver": fake}
    else:
        modules = dict.fromkeys(("cuda", "cuda.bindings", "cuda.bindings.driver", "cuda.cuda"))
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)


@pytest.mark.parametrize(
    "cuda_python, driver, detail, pip",
    [
        (True, False, NO_DRIVER, False),  # the driver is what is missing: no pip advice
        (False, False, NO_DRIVER, True),  # both: the driver first, and the package after it
        (False, True, "cuda-python is not installed", True),  # only the package
    ],
)
def test_doctor_names_what_is_missing_for_cuda(gl, monkeypatch, capsys, cuda_python, driver, detail, pip):
    from glrec.cuda import driver as drv

    _fake_cuda_python(monkeypatch, installed=cuda_python)
    monkeypatch.setattr(drv, "driver_installed", lambda: driver, raising=False)
    drv.driver.cache_clear()
    try:
        assert main(["doctor"]) == 0
    finally:
        drv.driver.cache_clear()
    out = capsys.readouterr().out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("CUDA "))
    cuda, remedy = lines[at], lines[at + 1]
    assert re.match(r"^CUDA +n/a +" + re.escape(detail), cuda), cuda
    assert ("pip install glrec[cuda]" in remedy) == pip, remedy
    assert "libcuda.so)" not in out and "system search" not in out  # cuda-python's own words stay in the log
    assert re.search(r"^NVENC +n/a +needs CUDA \(", out, re.M), out


# -- 3. a bitrate without its unit ------------------------------------------------------------------------


def test_a_bitrate_without_its_unit_is_refused_with_what_it_likely_meant(gl, tmp_path, capsys):
    out = tmp_path / "b.mp4"
    assert main(["record", "bars", "-o", str(out), "--size", "64x48", "--frames", "2", "--bitrate", "8"]) == 2
    err = capsys.readouterr().err
    assert "--bitrate 8 is 8 bit/s" in err and "did you mean 8M?" in err and err.count("\n") == 1, err
    assert not out.exists()
    with pytest.raises(glrec.ConfigError, match="did you mean 500k"):
        glrec.Recorder(tmp_path / "c.mp4", size=(64, 48), bitrate=500)
    assert main(["record", "bars", "-o", str(out), "--size", "64x48", "--frames", "5", "--bitrate", "8M", "-q"]) == 0
    assert len(_frames(out)) == 5


# -- 4. live commands check everything before they announce themselves -----------------------------------


@pytest.mark.parametrize("flags", [["--encoder", "gl"], ["--preset", "fastest"]])
def test_stream_checks_its_options_before_it_announces_itself(gl, cpu_only, capsys, flags):
    to = f"udp://127.0.0.1:{free_port()}"
    assert main(["stream", "cube", "--to", to, "--size", "64x48", "--frames", "2", *flags]) == 2
    err = capsys.readouterr().err
    assert "streaming" not in err and "codec mjpeg" not in err, err  # nor advice that stream would refuse
    if flags[1] == "gl":
        assert "udp:// carries h264 or hevc" in err and "--encoder auto or nvenc or cpu" in err, err


def test_serve_checks_its_options_before_it_prints_the_address(gl, cpu_only, capsys):
    assert main(["serve", "cube", "--port", "0", "--size", "64x48", "--frames", "2", "--preset", "fastest"]) == 2
    captured = capsys.readouterr()
    assert "open http" not in captured.out and "Unknown preset" in captured.err, captured


@pytest.mark.parametrize("command", ["stream", "serve"])
def test_live_commands_offer_only_what_they_take(command):
    text = _help(command)
    for flag in ("--quality", "--no-audio"):
        assert flag not in text, flag
    encoder = re.search(r"--encoder ENCODER\s+(.*?)\n  -", text, re.S)
    assert encoder is not None and "gl" not in encoder.group(1) and "nvjpeg" not in encoder.group(1), text
    codec = re.search(r"--codec CODEC\s+(.*?)\n  -", text, re.S)
    assert codec is not None and "mjpeg" not in codec.group(1) and "av1" not in codec.group(1), text
    with pytest.raises(SystemExit) as info:
        main([command, "cube", "--quality", "50", *(["--to", "udp://127.0.0.1:1"] if command == "stream" else [])])
    assert info.value.code == 2


# -- 6. -y wherever a command writes; messages name flags -------------------------------------------------


def test_dataset_preview_and_dataset_take_y(gl, tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text('[dataset]\nscene = "table"\nsamples = 2\nsize = "32x24"\nshard_size = 2\nseed = 3\n'
                    '[output]\npasses = ["rgb"]\n')  # fmt: skip
    png = tmp_path / "p.png"
    for _ in range(2):
        assert main(["dataset-preview", str(spec), "-o", str(png), "-y", "-q"]) == 0
    assert Image.open(png).size[1] >= 24  # decodes: colour | depth | instance | normal, each 24 rows high
    out = tmp_path / "ds"
    for _ in range(2):
        assert main(["dataset", str(spec), "-o", str(out), "--workers", "1", "-y", "-q"]) == 0
    with tarfile.open(next(out.glob("shard-*.tar"))) as tar:
        assert sorted(n.split(".", 1)[1] for n in tar.getnames()).count("rgb.png") == 2


def test_cli_messages_name_flags_and_python_messages_keywords(gl, tmp_path, capsys):
    out = tmp_path / "a.mp4"
    out.write_bytes(b"keep")
    assert main(["record", "bars", "-o", str(out), "--size", "64x48", "--frames", "2"]) == 1
    err = capsys.readouterr().err
    assert "pass --overwrite (-y) to replace it" in err and "overwrite=True" not in err, err
    assert main(["record", "bars", "-o", str(tmp_path / "b.mkv"), "--encoder", "gl", "--codec", "mjpeg",
                 "--crf", "20"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "drop --crf" in err and "(--crf 20.0 given)" in err, err
    with pytest.raises(glrec.OutputExistsError, match=r"pass overwrite=True"):
        glrec.record("bars", out, size=(64, 48), frames=2, overwrite=False)
    with pytest.raises(glrec.ConfigError, match=r"drop crf$"):
        glrec.Recorder(tmp_path / "c.mkv", size=(64, 48), encoder="gl", codec="mjpeg", crf=20)
    assert out.read_bytes() == b"keep"


# -- 7. a misspelled flag ---------------------------------------------------------------------------------


def test_a_misspelled_flag_gets_did_you_mean(capsys):
    with pytest.raises(SystemExit) as info:
        main(["record", "cube", "--fsp", "30", "-o", "x.mp4"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].endswith("unrecognized arguments: --fsp 30; did you mean --fps?"), err
    assert "glrec record --help" in err[1]


# -- 8. JPEG records odd sizes ------------------------------------------------------------------------------


@pytest.mark.parametrize("encoder", ["cpu", "gl"])
def test_jpeg_records_odd_sizes_as_they_are(gl, tmp_path, encoder):
    size = (65, 49)
    out = tmp_path / "f_%02d.jpg"
    assert main(["record", "bars", "-o", str(out), "--size", "65x49", "--frames", "3", "--encoder", encoder]) == 0
    ref = reference_rgb("bars", size, 3, 30.0)
    files = sorted(tmp_path.glob("f_*.jpg"))
    assert len(files) == 3
    for f, want in zip(files, ref, strict=True):
        got = np.asarray(Image.open(f).convert("RGB"))
        assert got.shape == (49, 65, 3)
        # the picture, not a shifted or stretched one (shifted by a column: 24 dB)
        assert psnr(_luma(got), _luma(want)) > 35, (f, psnr(_luma(got), _luma(want)))
    mkv = tmp_path / "o.mkv"
    assert main(["record", "bars", "-o", str(mkv), "--size", "65x49", "--frames", "3", "--codec", "mjpeg",
                 "--encoder", encoder]) == 0  # fmt: skip
    assert [f.shape for f in _frames(mkv)] == [(49, 65, 3)] * 3
    with pytest.raises(glrec.ConfigError, match="odd dimension"):
        glrec.Recorder(tmp_path / "v.mp4", size=size)  # the video codecs still need pad or yuv444p


# -- 10. the smaller things ---------------------------------------------------------------------------------


def test_the_environments_the_readme_makes_are_ignored_by_git():
    done = subprocess.run(["git", "check-ignore", ".venv/bin/python", ".mypy_cache/3.11/x.json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.stdout.split() == [".venv/bin/python", ".mypy_cache/3.11/x.json"], done


def test_record_help_lists_its_encoding_flags_in_reading_order():
    text = _help("record").split("\nencoding:\n", 1)[1].split("\n\n", 1)[0]
    flags = re.findall(r"^  (-[-\w]+)", text, re.M)
    assert flags[:15] == [
        "--size",
        "--fps",
        "--codec",
        "--encoder",
        "--crf",
        "--qp",
        "--bitrate",
        "--quality",
        "--preset",
        "--gop",
        "--bframes",
        "--pix-fmt",
        "--matrix",
        "--range",
        "--pad",
    ], flags
    assert flags[-1] == "-x", flags  # the escape hatch last


def test_the_progress_bar_is_labelled_with_the_output(gl, tmp_path, monkeypatch):
    import tqdm

    made = []

    class Bar(tqdm.tqdm):  # type: ignore[misc]
        def __init__(self, *args, **kwargs):
            made.append(kwargs.get("desc"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    assert main(["record", "bars", "-o", str(tmp_path / "clip.mp4"), "--size", "64x48", "--frames", "2", "-q"]) == 0
    assert main(["transcode", str(tmp_path / "clip.mp4"), "-o", str(tmp_path / "again.mkv"), "-q"]) == 0
    assert made == ["clip.mp4", "again.mkv"]


def test_transcode_is_a_command_and_record_input_still_works(gl, tmp_path, capsys):
    top = _help()
    first = top.split("positional arguments")[0]
    assert "glrec transcode INPUT -o OUT" in first and "glrec record INPUT -o OUT" in first, first
    src = tmp_path / "in.mkv"
    glrec.record("bars", src, size=(64, 48), fps=30, frames=12, codec="h264")
    for command, name in (("transcode", "a.mp4"), ("record", "b.mp4")):
        assert main([command, str(src), "-o", str(tmp_path / name), "-q"]) == 0
        got, want = _frames(tmp_path / name), _frames(src)
        assert len(got) == 12 and min(psnr(a, b) for a, b in zip(got, want, strict=True)) > 28
    assert main(["transcode", "cube", "-o", str(tmp_path / "c.mp4")]) == 2
    assert "use glrec record cube" in capsys.readouterr().err
