"""From raw rows to the figures people read: medians, ratios, efficiency, targets.

Every glrec figure is a ratio to baseline (a), ``naive-imageio``, measured in
the same run; where that baseline could not run (no imageio-ffmpeg on the
machine) the ratio is to ``naive-pyav`` and says so.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from .backends import BACKENDS

REFERENCE = "naive-imageio"
FALLBACK_REFERENCE = "naive-pyav"
#: x264's threading options. They are compared like every other option: frame threads (what the ffmpeg
#: command line and glrec use) and slice threads (PyAV's default) encode at different speeds.
X264_THREADING = frozenset({"threads", "lookahead_threads", "sliced_threads", "slices"})

TARGETS = {
    "cpu": ("glrec:cpu frames/s vs naive-imageio at equal x264 settings", 1.5),
    "nvjpeg": ("glrec:nvjpeg frames/s vs naive-imageio", 20.0),
    "nvjpeg_efficiency": ("glrec:nvjpeg pipeline efficiency (e2e / serial bound: GL and CUDA take turns)", 0.9),
    "memory": ("peak RSS of 10N frames / N frames", 1.10),
}


def _group(row: dict[str, Any]) -> str:
    return f"{row['scene']} {row['size']}"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _mean_stages(rows: list[dict[str, Any]]) -> dict[str, float]:
    acc: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        for k, v in r.get("stages_ms", {}).items():
            acc[k].append(v)
    return {k: statistics.fmean(v) for k, v in acc.items()}


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per (scene, size, row): median frames/s over runs, ratios, CPU, memory, stages."""
    by_key: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    order: list[tuple[str, str]] = []
    for r in rows:
        if r.get("memory_check") or r["row"].startswith("glrec-profiled:"):
            continue
        key = (_group(r), r["row"])
        if key not in by_key:
            order.append(key)
        by_key[key].append(r)
    profiled = {
        (_group(r), r["row"].replace("glrec-profiled:", "glrec:")): r
        for r in rows
        if r["row"].startswith("glrec-profiled:")
    }
    out = []
    for key in order:
        runs = by_key[key]
        ok = [r for r in runs if r["status"] == "ok"]
        first = runs[0]
        line: dict[str, Any] = {
            "group": key[0], "scene": first["scene"], "size": first["size"], "row": key[1],
            "backend": first.get("backend"), "frames": first["frames"], "runs": len(runs), "runs_ok": len(ok),
        }  # fmt: skip
        if not ok:
            line["status"] = runs[0]["status"]
            line["reason"] = runs[0].get("reason", "")
            out.append(line)
            continue
        line["status"] = "ok"
        line["fps_samples"] = [r["fps"] for r in ok]
        line["fps"] = _median(line["fps_samples"])
        line["cpu_use"] = _median([r["cpu_use"] for r in ok])
        # CPU time per frame moves less than frames/s when neighbours load the machine.
        line["cpu_ms_per_frame"] = _median([1e3 * r["cpu_seconds"] / r["frames"] for r in ok])
        line["peak_rss_mb"] = _median([r["peak_rss_mb"] for r in ok])
        line["child_peak_rss_mb"] = _median([r["child_peak_rss_mb"] for r in ok])
        if "frames_written" in ok[0]:
            line["frames_written"] = [r["frames_written"] for r in ok]
        line["x264"] = ok[0].get("x264")
        prof = profiled.get(key)
        if prof is not None and prof["status"] == "ok":
            line["stages_ms"] = prof["stages_ms"]
            line["stage_source"] = f"{prof['row']} ({prof['stage_clock']}), {prof['fps']:.1f} fps while profiled"
        else:
            line["stages_ms"] = _mean_stages(ok)
            line["stage_source"] = "this row (wall clock)"
        out.append(line)
    _add_ratios(out)
    return out


def _add_ratios(summary: list[dict[str, Any]]) -> None:
    fps = {(s["group"], s["row"]): s.get("fps") for s in summary}
    for s in summary:
        if s.get("fps") is None:
            continue
        for base, field in ((REFERENCE, "x_naive_imageio"), (FALLBACK_REFERENCE, "x_naive_pyav")):
            b = fps.get((s["group"], base))
            s[field] = s["fps"] / b if b else None
        s["reference"] = REFERENCE if s["x_naive_imageio"] is not None else FALLBACK_REFERENCE
        s["x_reference"] = s["x_naive_imageio"] if s["x_naive_imageio"] is not None else s["x_naive_pyav"]
        naive = next((x for x in summary if x["group"] == s["group"] and x["row"] == REFERENCE), None)
        if s["row"] != REFERENCE and naive and s.get("x264") and naive.get("x264"):
            a, b = s["x264"]["options"], naive["x264"]["options"]
            differs = {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
            s["x264_differs_from_naive"] = differs
            # Equal settings: the same x264 core and every option the same, threading included.
            s["x264_equal_settings"] = not differs and s["x264"].get("core") == naive["x264"].get("core")


def efficiency(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group and backend: end-to-end frames/s over the slowest stage that runs beside it."""
    fps = {(s["group"], s["row"]): s.get("fps") for s in summary}
    cpu_ms = {(s["group"], s["row"]): s.get("cpu_ms_per_frame") for s in summary}
    out = []
    for s in summary:
        backend = BACKENDS.get(s.get("backend") or "")
        if backend is None or not s["row"].startswith("glrec:") or s.get("fps") is None:
            continue
        found = {name: fps.get((s["group"], name)) for name in backend.parallel_stages}
        stages: dict[str, float] = {k: float(v) for k, v in found.items() if v is not None}
        if not stages or len(stages) != len(found):
            continue
        slowest = min(stages, key=lambda k: stages[k])
        serial = 1.0 / sum(1.0 / v for v in stages.values())
        # Stages that take turns on one GPU cannot overlap: their bound is the serial one.
        bound = serial if backend.turns else stages[slowest]
        line = {
            "group": s["group"], "backend": backend.name, "fps": s["fps"], "stage_fps": stages,
            "slowest_stage": slowest, "efficiency": s["fps"] / bound, "bound": "serial" if backend.turns else "slowest",
            "serial_fps": serial, "x_serial": s["fps"] / serial, "cpu_ms_per_frame": s["cpu_ms_per_frame"],
        }  # fmt: skip
        floor = [cpu_ms.get((s["group"], name)) for name in backend.floor_stages]
        naive = cpu_ms.get((s["group"], REFERENCE))
        if floor and None not in floor and naive:
            # When every stage runs on the same CPU cores, no pipeline can spend less CPU per frame
            # than rendering and encoding alone do; the naive loop's CPU per frame over that floor
            # is the most any pipeline could gain here with the cores equally busy.
            line["floor_cpu_ms_per_frame"] = sum(floor)
            line["naive_cpu_ms_per_frame"] = naive
            line["ceiling_x_naive"] = naive / sum(floor)  # type: ignore[arg-type]
        out.append(line)
    return out


def memory(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    runs = sorted((r for r in rows if r.get("memory_check")), key=lambda r: r["frames"])
    if len(runs) != 2:
        return None
    small, large = runs
    out: dict[str, Any] = {"row": small["row"], "scene": small["scene"], "size": small["size"]}
    for tag, r in (("n", small), ("10n", large)):
        out[f"frames_{tag}"] = r["frames"]
        out[f"status_{tag}"] = r["status"]
        out[f"peak_rss_mb_{tag}"] = r.get("peak_rss_mb")
        out[f"frames_written_{tag}"] = r.get("frames_written")
    if small["status"] == large["status"] == "ok":
        out["ratio"] = large["peak_rss_mb"] / small["peak_rss_mb"]
        out["growth_mb"] = large["peak_rss_mb"] - small["peak_rss_mb"]
    return out


def targets(
    summary: list[dict[str, Any]], eff: list[dict[str, Any]], mem: dict[str, Any] | None
) -> list[dict[str, Any]]:
    out = []
    for s in summary:
        if s["row"] in ("glrec:cpu", "glrec:nvjpeg") and s.get("x_reference") is not None:
            what, goal = TARGETS[s["backend"]]
            if s["reference"] != REFERENCE:
                what = what.replace(REFERENCE, s["reference"])
            t = {"target": what, "where": s["group"], "goal": goal, "measured": s["x_reference"]}
            if s["row"] == "glrec:cpu" and s.get("x264_equal_settings") is False:
                if s["x264_differs_from_naive"]:
                    t["settings_differ"] = s["x264_differs_from_naive"]  # not a comparison at equal settings
                else:  # the same options from another x264 version (e.g. a static ffmpeg build): said, not failed
                    t["note"] = "same x264 options, another x264 core in the baseline's ffmpeg"
            out.append(t)
    for e in eff:
        if e["backend"] == "nvjpeg":
            what, goal = TARGETS["nvjpeg_efficiency"]
            out.append({"target": what, "where": e["group"], "goal": goal, "measured": e["efficiency"]})
    if mem and "ratio" in mem:
        what, goal = TARGETS["memory"]
        where = f"{mem['scene']} {mem['size']}, {mem['frames_n']} vs {mem['frames_10n']} frames"
        out.append({"target": what, "where": where, "goal": goal, "measured": mem["ratio"], "at_most": True})
    for t in out:
        t["met"] = t["measured"] <= t["goal"] if t.get("at_most") else t["measured"] >= t["goal"]
        if t.get("settings_differ"):
            t["met"] = False
    return out


def analyse(doc: dict[str, Any]) -> dict[str, Any]:
    """The derived sections of a result document: summary, efficiency, memory, targets."""
    summary = summarise(doc["rows"])
    eff = efficiency(summary)
    mem = memory(doc["rows"])
    return {"summary": summary, "efficiency": eff, "memory": mem, "targets": targets(summary, eff, mem)}
