"""The ``glrec`` command (also ``python -m glrec``)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .errors import GlrecError
from .options import CONTAINERS, parse_size
from .recorder import Recorder, frame_count
from .scenes import load_scene

log = logging.getLogger("glrec")

#: Modules that add subcommands (bench, info, doctor, ...): each has register(subparsers, common).
SUBCOMMAND_MODULES: list[str] = [
    "glrec.stream.cli",  # stream, serve
    "glrec.diagnostics",  # info, doctor
    "glrec.dataset.cli",  # dataset, dataset-preview
    "glrec.bench.cli",  # bench
]

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: finish the file, exit non-zero."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def _add_encode_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("encoding")
    g.add_argument(
        "--codec", default="h264", help="h264 (default), hevc, av1 (.ivf), mjpeg (.mkv/.mov/.avi, or frames_%%06d.jpg)"
    )
    g.add_argument(
        "--encoder", default="auto", help="auto (default: NVENC, nvJPEG or CPU; see glrec info), cpu, nvenc, nvjpeg"
    )
    rc = g.add_mutually_exclusive_group()
    rc.add_argument("--crf", type=float, help="constant quality (x264 default 20; lower is better)")
    rc.add_argument("--qp", type=int, help="constant quantiser (0 = lossless for h264)")
    rc.add_argument("--bitrate", type=_bitrate, help="target bitrate, e.g. 8M or 2500k")
    g.add_argument("--preset", help="encoder preset (x264/x265: ultrafast..veryslow, default veryfast; SVT-AV1: 0-13)")
    g.add_argument("--gop", type=int, help="frames between keyframes")
    g.add_argument("--bframes", type=int, help="B-frames between references")
    g.add_argument("--pix-fmt", default="yuv420p", help="yuv420p (default), nv12, yuv444p, rgba (NVENC ABGR)")
    g.add_argument("--matrix", help="bt709 (default) or bt601")
    g.add_argument("--range", dest="colour_range", help="limited (default) or full")
    g.add_argument("--quality", type=int, default=90, help="JPEG quality 1-100 for mjpeg (default 90)")
    g.add_argument("--pad", action="store_true", help="pad odd sizes to even (4:2:0) by repeating the edge")
    gpu = p.add_argument_group("GPU path (NVIDIA)")
    gpu.add_argument("--handoff", default="auto", help="auto (default), host (PBO readback), register, shared")
    gpu.add_argument("--cuda-device", type=int, default=0, help="CUDA device ordinal (default 0; EGL is matched)")
    gpu.add_argument("--tuning", help="NVENC tuning: hq (default), ll, ull, lossless")
    gpu.add_argument("--rc", help="NVENC rate control: vbr (default), cbr, constqp")


def _bitrate(text: str) -> int:
    mult = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
    t = text.strip().lower()
    try:
        if t and t[-1] in mult:
            return int(float(t[:-1]) * mult[t[-1]])
        return int(float(t))
    except ValueError:
        raise argparse.ArgumentTypeError(f"bitrate {text!r} is not a number such as 8M or 2500k") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="glrec", description="Render OpenGL scenes headless and record them to video."
    )
    parser.add_argument("--version", action="version", version=f"glrec {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    rec = sub.add_parser("record", parents=[common], help="record a scene to a video file")
    rec.add_argument("scene", help="built-in name (see 'glrec scenes'), file.py[:Class], or shader.glsl")
    rec.add_argument("-o", "--output", required=True, help=f"output file ({', '.join(sorted(CONTAINERS))})")
    rec.add_argument("--size", default="1280x720", help="WIDTHxHEIGHT (default 1280x720)")
    rec.add_argument("--fps", type=float, default=30.0, help="frames per second (default 30)")
    length = rec.add_mutually_exclusive_group()
    length.add_argument("--seconds", type=float, help="length in seconds (default 5)")
    length.add_argument("--frames", type=int, help="length in frames")
    rec.add_argument("--overwrite", action="store_true", help="replace the output if it exists")
    rec.add_argument("--device", type=int, help="EGL device index")
    _add_encode_options(rec)
    rec.set_defaults(func=_cmd_record)

    sub.add_parser("scenes", parents=[common], help="list the built-in scenes").set_defaults(func=_cmd_scenes)

    # Further commands live in their own modules, each with register(subparsers, common)
    # that adds a parser and sets func; imported here so `glrec --help` lists them all.
    import importlib

    for module in SUBCOMMAND_MODULES:
        importlib.import_module(module).register(sub, common)
    return parser


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    # main() may run many times in one process (tests, embedding): add the handler once.
    if not any(getattr(h, "_glrec_cli", False) for h in log.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("glrec: %(message)s"))
        handler._glrec_cli = True  # type: ignore[attr-defined]
        log.addHandler(handler)
    log.setLevel(level)


def _cmd_scenes(args: argparse.Namespace) -> int:
    from .scenes import BUILTINS

    for name, (_, text) in BUILTINS.items():
        print(f"{name:<10} {text}")
    print("\nAlso: a Python file with a Scene class (my_scene.py:MyScene) or a Shadertoy-style shader (my.glsl).")
    return 0


def _cmd_record(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    # --seconds and --frames exclude each other; with neither, record five seconds.
    seconds = 5.0 if args.seconds is None and args.frames is None else args.seconds
    n = frame_count(args.fps, seconds, args.frames)
    parse_size(args.size)
    scene = load_scene(args.scene)  # a bad scene name fails before any GL object or file exists
    with Recorder(
        args.output,
        size=args.size,
        fps=args.fps,
        codec=args.codec,
        encoder=args.encoder,
        pix_fmt=args.pix_fmt,
        matrix=args.matrix,
        range=args.colour_range,
        crf=args.crf,
        qp=args.qp,
        bitrate=args.bitrate,
        preset=args.preset,
        gop=args.gop,
        bframes=args.bframes,
        quality=args.quality,
        pad=args.pad,
        overwrite=args.overwrite,
        device=args.device,
        handoff=args.handoff,
        cuda_device=args.cuda_device,
        tuning=args.tuning,
        rc=args.rc,
    ) as rec:
        args.recorder = rec  # for main()'s message if Ctrl-C or SIGTERM ends the recording
        bar = tqdm(total=n, unit="frame", disable=args.quiet or None, leave=False, dynamic_ncols=True)
        try:
            for _ in range(n):
                rec.render(scene)
                bar.update(1)
        finally:
            bar.close()
    result = rec.close()
    if not args.quiet:
        print(result.summary())
    return 0


def _interrupted_output(args: argparse.Namespace) -> str:
    """What became of the output when a recording was cut short (the recorder has finished it)."""
    rec = getattr(args, "recorder", None)
    out = getattr(args, "output", None)
    if rec is None:
        return f"nothing was recorded{f' to {out}' if out else ''}."
    try:
        frames = rec.close().frames  # already closed by its with block: returns the result
    except Exception as exc:
        return f"finishing {rec.path} failed: {exc}"
    if frames == 0:
        return f"no frame was complete, so {rec.path} was not written."
    if frames != rec.frames_submitted:
        return f"{rec.path} was finished with {frames} of the {rec.frames_submitted} frames recorded so far."
    return f"{rec.path} was finished with all {frames} frames recorded so far."


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.verbose)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return int(args.func(args))
    except KeyboardInterrupt as exc:
        what = "terminated" if isinstance(exc, _Terminated) else "interrupted"
        print(f"glrec: {what}; {_interrupted_output(args)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except GlrecError as exc:
        print(f"glrec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, ValueError) else EXIT_ERROR
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
