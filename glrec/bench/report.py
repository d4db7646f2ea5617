"""Readable output: the table, the JSON file, and the plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .meter import STAGES


def _f(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def headline(doc: dict[str, Any]) -> str:
    m, gl, cfg = doc["machine"], doc.get("gl") or {}, doc["config"]
    return (
        f"glrec bench {doc['created'][:10]}: {m['cpu']} ({m['cores_usable']} cores), "
        f"{gl.get('renderer', 'no GL')}; libx264 preset {cfg['preset']} crf {cfg['crf']:g}"
    )


def table(doc: dict[str, Any]) -> str:
    """The summary as aligned text: one line per row kind, grouped by scene and size."""
    cols = ["scene", "size", "row", "fps", "x naive", "cpu", "cpu ms/f", "peak MB", *STAGES]
    lines = [
        headline(doc),
        f"fps: median of {doc['config']['repeat']} interleaved run(s); x naive: frames/s over naive-imageio's "
        "in the same run; cpu: cores busy;",
        "cpu ms/f: CPU time per frame (this process and its ffmpeg child; steadier than fps on a busy machine);",
        "peak MB: process (+ ffmpeg child); stage columns: ms per frame (glrec rows: profiled pass);",
        "glrec-xN: N recordings at once, total frames/s; dataset:wN: samples/s with N workers (+ largest worker).",
        "",
    ]
    rows: list[list[str]] = []
    last_group = None
    for s in doc["summary"]:
        group = (s["scene"], s["size"]) if s["group"] != last_group else ("", "")
        last_group = s["group"]
        if s["status"] != "ok":
            rows.append([*group, s["row"], s["status"], "", "", "", "", *([""] * len(STAGES))])
            rows[-1][-1] = (s.get("reason") or "").splitlines()[0][:70] if s.get("reason") else ""
            continue
        ratio = s.get("x_reference")
        mark = "" if ratio is None or s.get("reference") == "naive-imageio" else "*"
        children = s["row"] == "naive-imageio" or s["row"].startswith("dataset:")  # ffmpeg; the dataset workers
        mem = f"{s['peak_rss_mb']:.0f}" + (f"+{s['child_peak_rss_mb']:.0f}" if children else "")
        stages = s.get("stages_ms", {})
        cells = [_f(stages.get(k), ".2f") for k in STAGES]
        if "handoff" in stages:  # the GL thread's whole job (render + convert + readback)
            cells = ["", "", _f(stages["handoff"], ".2f") + " (all)", "", ""]
        rows.append(
            [*group, s["row"], f"{s['fps']:.1f}", _f(ratio, ".2f") + mark, f"{s['cpu_use']:.2f}",
             f"{s['cpu_ms_per_frame']:.2f}", mem, *cells]
        )  # fmt: skip
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(cols)]
    lines.append("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip())
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if any(s.get("reference") == "naive-pyav" and s.get("x_reference") for s in doc["summary"] if s["status"] == "ok"):
        lines.append("* ratio to naive-pyav: naive-imageio did not run here")
    lines += ["", *x264_lines(doc), *summary_lines(doc)]
    return "\n".join(lines)


#: The x264 options that decide speed at a preset, shown first; the full strings are in the JSON.
_KEY_OPTIONS = ("threads", "lookahead_threads", "sliced_threads", "slices", "crf", "bframes", "ref", "me",
                "subme", "rc_lookahead", "trellis", "aq")  # fmt: skip


def x264_lines(doc: dict[str, Any]) -> list[str]:
    """The x264 settings each compared row's stream says it was encoded with, against naive-imageio's."""
    lines: list[str] = []
    ffmpeg = next((r.get("ffmpeg") for r in doc["rows"] if r["row"] == "naive-imageio" and r.get("ffmpeg")), None)
    if isinstance(ffmpeg, dict):
        lines.append(f"baseline (a) ffmpeg: {ffmpeg['path']} ({ffmpeg['found_by']}): {ffmpeg['version']}")
    for group in dict.fromkeys(s["group"] for s in doc["summary"]):
        rows = [s for s in doc["summary"] if s["group"] == group and s["status"] == "ok" and s.get("x264")]
        ref = next((s for s in rows if s["row"] == "naive-imageio"), None)
        if not rows:
            continue
        lines.append(f"x264 settings compared, {group} (read from each stream):")
        for s in rows:
            opts = s["x264"]["options"]
            shown = " ".join(f"{k}={opts[k]}" for k in _KEY_OPTIONS if k in opts)
            head = f"  {s['row']:18} core {s['x264'].get('core')}: {shown}"
            if ref is None or s is ref:
                lines.append(head + ("" if ref is None else "  (the reference)"))
                continue
            differs = s.get("x264_differs_from_naive") or {}
            verdict = "equal to naive-imageio's, threading included" if s.get("x264_equal_settings") else (
                "DIFFERS from naive-imageio's: " + ", ".join(f"{k} {a} vs {b}" for k, (a, b) in differs.items())
                if differs else f"same options, x264 core {ref['x264'].get('core')} in naive-imageio"
            )  # fmt: skip
            lines.append(f"{head}  -> {verdict}")
    return lines


def summary_lines(doc: dict[str, Any]) -> list[str]:
    lines = []
    for e in doc.get("efficiency", []):
        head = f"efficiency {e['group']} {e['backend']}: {e['fps']:.1f} fps end to end /"
        slowest = f"{e['stage_fps'][e['slowest_stage']]:.1f} fps slowest stage ({e['slowest_stage']})"
        if e.get("bound") == "serial":  # stages that take turns on one GPU: their bound is one after the other
            lines.append(
                f"{head} {e['serial_fps']:.1f} fps with the stages one after another (they take turns on the GPU) "
                f"= {e['efficiency']:.2f}; {slowest}"
            )
        else:
            lines.append(
                f"{head} {slowest} = {e['efficiency']:.2f}; the stages one after another would give "
                f"{e['serial_fps']:.1f} fps (overlap x{e['x_serial']:.2f})"
            )
        if "ceiling_x_naive" in e:
            naive, glrec, floor = e["naive_cpu_ms_per_frame"], e["cpu_ms_per_frame"], e["floor_cpu_ms_per_frame"]
            lines.append(
                f"  CPU per frame: naive-imageio {naive:.1f} ms, glrec {glrec:.1f} ms, render + encode alone "
                f"{floor:.1f} ms: any pipeline on these cores is at most x{e['ceiling_x_naive']:.2f} naive-imageio"
            )
    mem = doc.get("memory")
    if mem:
        if "ratio" in mem:
            lines.append(
                f"memory {mem['row']} {mem['scene']} {mem['size']}: peak RSS {mem['peak_rss_mb_n']:.0f} MB for "
                f"{mem['frames_n']} frames, {mem['peak_rss_mb_10n']:.0f} MB for {mem['frames_10n']} "
                f"(x{mem['ratio']:.3f}, {mem['growth_mb']:+.1f} MB); idle process with a GL context "
                f"{_f(doc.get('idle_rss_mb'), '.0f')} MB"
            )
        else:
            lines.append(f"memory check did not complete: {mem.get('status_n')}, {mem.get('status_10n')}")
    for t in doc.get("targets", []):
        op = "<=" if t.get("at_most") else ">="
        state = "met" if t["met"] else "NOT met"
        if t.get("settings_differ"):
            state += " (x264 settings differ from the baseline's: not a comparison at equal settings)"
        elif t.get("note"):
            state += f" ({t['note']})"
        lines.append(f"target {t['target']} ({t['where']}): {t['measured']:.2f} {op} {t['goal']:g}: {state}")
    return lines


def save_json(doc: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    return path


def load_json(path: Path) -> dict[str, Any]:
    from ..errors import ConfigError

    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"Cannot read benchmark results {str(path)!r}: {exc}.") from exc
    if not isinstance(doc, dict) or doc.get("schema") != "glrec-bench/1":
        raise ConfigError(f"{str(path)!r} is not a glrec bench result (schema glrec-bench/1).")
    return doc


def plot(doc: dict[str, Any], path: Path) -> Path:
    """Frames/s by resolution, one panel per scene, one bar per baseline and glrec backend.

    Needs matplotlib (``pip install 'glrec[bench]'``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError as exc:
        from ..errors import ConfigError

        raise ConfigError("The plot needs matplotlib: pip install 'glrec[bench]', or run with --no-plot.") from exc
    summary = [s for s in doc["summary"] if s["status"] == "ok" and not s["row"].startswith("stage:")]
    scenes = list(dict.fromkeys(s["scene"] for s in summary))
    sizes = list(dict.fromkeys(s["size"] for s in summary))
    names = list(dict.fromkeys(s["row"] for s in summary))
    fig, axes = plt.subplots(1, max(1, len(scenes)), figsize=(5.2 * max(1, len(scenes)), 4.2), squeeze=False)
    width = 0.8 / max(1, len(names))
    for ax, scene in zip(axes[0], scenes, strict=False):
        for j, name in enumerate(names):
            xs, ys, labels = [], [], []
            for i, size in enumerate(sizes):
                s = next((x for x in summary if (x["scene"], x["size"], x["row"]) == (scene, size, name)), None)
                if s is None:
                    continue
                xs.append(i + (j - (len(names) - 1) / 2) * width)
                ys.append(s["fps"])
                labels.append("" if name.startswith("naive") else f"x{s['x_reference']:.2f}")
            bars = ax.bar(xs, ys, width, label=name)
            for bar, text in zip(bars, labels, strict=True):
                if text:
                    ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                                va="bottom", fontsize=7, xytext=(0, 2), textcoords="offset points")  # fmt: skip
        ax.set_xticks(range(len(sizes)), sizes)
        ax.set_yscale("log")
        plain = FuncFormatter(lambda v, _: f"{v:g}")  # 60, not 6 x 10^1
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
        ax.tick_params(axis="y", which="minor", labelsize=7)
        ax.set_title(f"scene {scene}")
        ax.set_ylabel("frames/s (end to end, log scale)")
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="upper right")
    gl = (doc.get("gl") or {}).get("renderer", "")
    m = doc["machine"]
    title = f"glrec bench {doc['created'][:10]}: {m['cpu']}, {m['cores_usable']} cores,\n{gl}"
    fig.suptitle(title, fontsize=9)  # two lines: CPU and GPU names are long
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
