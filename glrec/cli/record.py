"""``glrec record`` (a scene, or a video input re-encoded, to a file) and ``glrec scenes`` (the built-in scenes)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..options import InputOptions, LengthOptions, VideoOptions
from .flags import add_flags, add_recording_flags, recording_options, values_from_args


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    rec = subparsers.add_parser(
        "record", parents=[common], help="record a scene, or re-encode a video input, to a file",
        description="Record a scene (built-in, Python file, Shadertoy shader) to a file: glrec record cube -o "
        "cube.mp4. Given a video input instead, it re-encodes it, as 'glrec transcode INPUT -o OUT' does.",
    )  # fmt: skip
    rec.add_argument("scene", help="built-in name (see 'glrec scenes'), file.py[:Class], a Shadertoy shader "
                     "(.glsl, folder, .json), or a video input (file, image, URL, /dev/videoN)")  # fmt: skip
    from ..sinks.registry import describe as describe_outputs  # here: it imports numpy, inside main()'s guard

    rec.add_argument("-o", "--output", required=True, help=f"output file ({describe_outputs()})")
    rec.add_argument("-y", "--overwrite", action="store_true", help="replace the output if it exists (as ffmpeg -y)")
    add_recording_flags(rec)
    add_flags(rec, InputOptions, title="video input and Shadertoy channels")
    rec.set_defaults(func=_cmd_record)

    scenes = subparsers.add_parser("scenes", parents=[common], help="list the built-in scenes")
    scenes.set_defaults(func=_cmd_scenes)


def _cmd_scenes(args: argparse.Namespace) -> int:
    from ..scenes import BUILTINS

    for name, (_, text) in BUILTINS.items():
        print(f"{name:<10} {text}")
    print(
        "\nAlso: a Python file with a Scene class (my_scene.py:MyScene), a Shadertoy shader (my.glsl, a folder of "
        "passes, an export .json), or a video input (file, image, URL, /dev/videoN) to re-encode, with --overlay."
    )
    return 0


def _cmd_record(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .._transcode import is_input, scene_with_channels
    from ..recorder import Recorder  # here, not at the top: main() handles a Ctrl-C during these imports
    from .transcode import transcode_command

    if is_input(args.scene):
        return transcode_command(args)
    options = recording_options(args)
    length = LengthOptions.parse(values_from_args(args, LengthOptions))
    n = length.count(VideoOptions.parse({"fps": args.fps}).fps)
    assert n is not None
    inputs = InputOptions.parse(values_from_args(args, InputOptions))
    if inputs.overlay is not None:
        raise ConfigError(f"--overlay draws over a video input; {args.scene!r} is a scene (draw in it instead).")
    # A bad scene name fails before any GL object or file exists.
    scene = scene_with_channels(args.scene, inputs.channels(), trusted=inputs.trust_export,
                                input_timeout=inputs.input_timeout)  # fmt: skip
    with Recorder(args.output, overwrite=args.overwrite, **options) as rec:
        args.recorder = rec  # for main()'s message if Ctrl-C or SIGTERM ends the recording
        bar = tqdm(total=n, unit="frame", desc=Path(args.output).name, disable=args.quiet or None, leave=False,
                   dynamic_ncols=True)  # fmt: skip
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
