"""``glrec transcode INPUT -o OUT [--overlay SCENE]`` (also ``glrec record INPUT``): :func:`glrec.transcode`.

The subcommand is registered here (through cli.SUBCOMMAND_MODULES); ``glrec record`` hands a video input to
:func:`transcode_command` as well, so both spellings do the same.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..options import InputOptions, LengthOptions
from .flags import add_flags, add_recording_flags, recording_options, values_from_args


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    from ..sinks.registry import describe as describe_outputs  # here: it imports numpy, inside main()'s guard

    tr = subparsers.add_parser(
        "transcode", parents=[common], help="re-encode a video input (file, image, URL, camera) to a file",
        description="Re-encode a video input, optionally drawing --overlay SCENE over every frame (the same as "
        "'glrec record INPUT -o OUT'). Size, frame rate and length default to the input's; audio is copied.",
    )  # fmt: skip
    tr.add_argument("scene", metavar="INPUT", help="a file FFmpeg reads, an image or image sequence "
                    "(frames_%%04d.png), a network URL or a camera (/dev/videoN)")  # fmt: skip
    tr.add_argument("-o", "--output", required=True, help=f"output file ({describe_outputs()})")
    tr.add_argument("-y", "--overwrite", action="store_true", help="replace the output if it exists (as ffmpeg -y)")
    add_recording_flags(tr)
    add_flags(tr, InputOptions, title="video input and Shadertoy channels")
    tr.set_defaults(func=_cmd_transcode)


def _cmd_transcode(args: argparse.Namespace) -> int:
    from .._transcode import is_input

    if not is_input(args.scene):
        raise ConfigError(f"{args.scene!r} is not a video input (a file, image, URL or camera); to record a scene, "
                          f"use glrec record {args.scene} -o {args.output}.")  # fmt: skip
    return transcode_command(args)


def transcode_command(args: Any) -> int:
    """``glrec transcode INPUT -o OUT [--overlay SCENE]``: :func:`transcode` from the command's flags."""
    from tqdm import tqdm

    from .._transcode import input_defaults, open_input, transcode
    from ..recorder import Recorder

    options = recording_options(args)
    given = values_from_args(args, InputOptions)
    inputs = InputOptions.parse(given)
    length = values_from_args(args, LengthOptions)
    # overlay and channels travel as their own arguments; the rest of the input options as keywords.
    passed = {k: v for k, v in given.items() if k != "overlay" and not k.startswith("channel")}
    # Opened here (not in transcode) to size the progress bar from the input's duration.
    src = open_input(args.scene, inputs, live=False, audio=not inputs.drop_audio, fps=options.get("fps"))
    try:
        fps = float(options.get("fps") or input_defaults(src)["fps"])
        total = LengthOptions.parse(length).count(fps, default=None)
        if total is None and src.duration and not (src.still or src.loop):
            total = round(src.duration * fps)
        bar = tqdm(total=total, unit="frame", desc=Path(args.output).name, disable=args.quiet or None, leave=False,
                   dynamic_ncols=True)  # fmt: skip

        def started(rec: Recorder) -> None:
            args.recorder = rec  # for main()'s message if Ctrl-C or SIGTERM ends the recording

        try:
            result = transcode(
                src, args.output, overlay=inputs.overlay, overwrite=args.overwrite, on_start=started,
                progress=lambda _: bar.update(1), **length, **options,
                **passed,
                channels=inputs.channels(),
            )  # fmt: skip
        finally:
            bar.close()
    finally:
        src.close()
    if not args.quiet:
        print(result.summary())
    return 0
