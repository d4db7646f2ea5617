"""``glrec dataset`` and ``glrec dataset-preview`` (registered through cli.SUBCOMMAND_MODULES)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import ConfigError


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "dataset",
        parents=[common],
        help="render a synthetic dataset from a TOML spec",
        description="Render the samples of a dataset spec (TOML) with ground truth into shards or folders. "
        'A spec whose scene is a Python file (scene = "my_scene.py:MyScene") runs that file\'s code, like '
        "'glrec record my_scene.py' does; only files in the spec's folder, unless --allow-scene-outside.",
    )
    p.add_argument("spec", help="dataset spec (TOML), e.g. examples/dataset.toml")
    p.add_argument(
        "--allow-scene-outside",
        action="store_true",
        help="run a Python scene file that is outside the spec's folder (only for a spec you trust)",
    )
    p.add_argument("-o", "--output", required=True, help="output folder (new or empty, unless --resume/--overwrite)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="keep the complete shards of this dataset, redo the rest")
    mode.add_argument("-y", "--overwrite", action="store_true",
                      help="replace the dataset in the output folder (its own files only)")  # fmt: skip
    p.add_argument(
        "--only",
        type=_indices,
        metavar="INDEX[,INDEX...]",
        help="render just these samples into OUTPUT/KEY/ folders (the same files as in the full run)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run shards as Ray tasks: on a new local cluster, or the cluster at ADDRESS (pip install 'glrec[ray]'); "
        "write it after SPEC, or as --ray=ADDRESS",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="local worker processes, each with its own GL context (default: one per usable core, at most "
        "8 and at most one per shard; 1: all in this process); the shards are the same bytes for any N",
    )
    p.add_argument("--retries", type=int, help="Ray: retries of a failed shard task (default 3)")
    p.add_argument("--device", type=int, help="EGL device index every local worker renders on")
    p.set_defaults(func=_cmd_dataset)

    v = sub.add_parser(
        "dataset-preview",
        parents=[common],
        help="write a PNG of one sample's colour, depth, instance and normal side by side",
    )
    v.add_argument("spec", help="dataset spec (TOML); a Python scene it names is run, as for 'glrec dataset'")
    v.add_argument("--allow-scene-outside", action="store_true", help="as for 'glrec dataset'")
    v.add_argument("-o", "--output", required=True, help="PNG file to write")
    v.add_argument("--index", type=int, default=0, help="sample index (default 0)")
    v.add_argument("-y", "--overwrite", action="store_true", help="replace the PNG if it exists (as ffmpeg -y)")
    v.set_defaults(func=_cmd_preview)


def _indices(text: str) -> list[int]:
    try:
        out = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of sample indices such as 3 or 3,17") from None
    if not out:
        raise argparse.ArgumentTypeError("give at least one sample index")
    return out


def _cmd_dataset(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..dataset.api import generate
    from ..dataset.files.only import write_samples
    from ..dataset.spec import DatasetSpec

    spec = DatasetSpec.load(args.spec, allow_scene_outside=args.allow_scene_outside)
    if args.retries is not None and args.ray is None:
        raise ConfigError("--retries applies to Ray's shard tasks; add --ray, or leave --retries out.")
    if args.workers is not None and args.ray is not None:
        raise ConfigError("--workers sets local worker processes; with --ray, Ray places one per GPU or CPU. Pick one.")
    if args.only is not None:
        if args.ray is not None or args.resume or args.workers is not None:
            raise ConfigError(
                "--only renders single samples in this process; it does not combine with --ray, --resume or --workers."
            )
        paths = write_samples(spec, args.only, args.output, overwrite=args.overwrite, device=args.device)
        if not args.quiet:
            for path in paths:
                meta = json.loads((path / "meta.json").read_text())
                print(f"{path}: seed {meta['seed']}, params {json.dumps(meta['params'])}")
        return 0
    bar = tqdm(total=spec.samples, unit="sample", desc=str(args.output), disable=args.quiet or None,
               dynamic_ncols=True, leave=False)  # fmt: skip
    options = {"max_retries": args.retries} if args.retries is not None else None
    try:
        result = generate(
            spec,
            args.output,
            resume=args.resume,
            overwrite=args.overwrite,
            ray=args.ray,
            workers=args.workers,
            device=args.device,
            progress=bar.update,
            ray_options=options,
        )
    except KeyboardInterrupt:
        args.interrupted_note = f"the complete shards in {args.output} are kept: run again with --resume."
        raise
    finally:
        bar.close()
    if not args.quiet:
        print(result.summary())
    return 0


def _cmd_preview(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from pathlib import Path

    from ..dataset.api import render_sample
    from ..dataset.files.encode import encode_png
    from ..dataset.files.preview import compose
    from ..dataset.files.writers import atomic_write
    from ..dataset.spec import DatasetSpec
    from ..sinks.paths import check_output_path

    out = check_output_path(Path(args.output), args.overwrite)  # links refused, existing only with --overwrite
    spec = DatasetSpec.load(args.spec, allow_scene_outside=args.allow_scene_outside)
    spec = spec.with_(output=replace(spec.output, passes=("rgb", "depth", "instance", "normal")))
    sample = render_sample(spec, args.index)
    atomic_write(out, encode_png(compose(sample)))
    if not args.quiet:
        print(f"{out}: sample {args.index} (seed {sample.seed}): colour with boxes | depth | instance | normal")
    return 0
