"""``glrec record INPUT -o OUT [--overlay SCENE]``: :func:`glrec.transcode` from the command's flags."""

from __future__ import annotations

from typing import Any

from .._transcode import input_defaults, open_input, transcode
from ..options import InputOptions, LengthOptions
from ..recorder import Recorder
from .flags import recording_options, values_from_args


def transcode_command(args: Any) -> int:
    """``glrec record INPUT -o OUT [--overlay SCENE]``: :func:`transcode` from the command's flags."""
    from tqdm import tqdm

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
        bar = tqdm(total=total, unit="frame", disable=args.quiet or None, leave=False, dynamic_ncols=True)

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
