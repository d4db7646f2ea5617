"""Which picture sizes each CPU encoder survives: a grid of tiny encodes, each case watched for memory errors.

A benchmark, not a test: its findings become the table in
``glrec/encoders/cpu_limits.py``, which glrec checks before it opens an encoder.

    python benchmarks/encoder_size_limits.py [--only hevc] [--quick] [--no-valgrind]
        [--json benchmarks/results/DATE_encoder-size-limits.json]

Every case (codec, width, height, pixel format, threading, preset) encodes
three frames with glrec's own :class:`~glrec.encoders.cpu.CpuEncoder` (so
with exactly the settings glrec uses), flushes and closes, in a child
process. Where valgrind is installed the children run under memcheck, and a
case is *bad* when memcheck counts any invalid read or write while it runs
(``VALGRIND_COUNT_ERRORS``, through a tiny helper library built with gcc): a
heap overrun is caught where it happens, not when glibc notices it much
later (the abort that made this necessary came 48-326 recordings after the
damage). Without valgrind each case is encoded ``--repeat`` times and only
crashes are seen. A child that dies or stops answering marks its current case
(``crash``/``hang``) and the grid goes on in a new child.

Threading variants: ``glrec`` is the encoder as glrec opens it; for libx265
``frame-threads=1`` and ``frame-threads=4`` add that x265 parameter; for
libx264 ``slice`` uses slice threads instead of glrec's frame threads.

``--cases FILE`` runs the cases listed in a JSON file instead of the grids;
``--classify`` runs each flagged case again alone under memcheck and records
which kinds of invalid access it makes (``Invalid write`` corrupts the heap;
an ``Invalid read`` past a block is an over-read), since memcheck prints only
the first occurrence of each error in a process.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_HELPER_C = r"""
#include <valgrind/valgrind.h>
#include <valgrind/memcheck.h>
unsigned long glrec_vg_errors(void) { return VALGRIND_COUNT_ERRORS; }
void glrec_vg_mark(const char *text) { VALGRIND_PRINTF("%s\n", text); }
"""


# -- the cases -------------------------------------------------------------------------------


def _case(codec: str, w: int, h: int, pix_fmt: str = "yuv420p", threads: str = "glrec", preset: str | None = None):
    return {"codec": codec, "w": w, "h": h, "pix_fmt": pix_fmt, "threads": threads, "preset": preset}


def _cross(codec: str, sides, at, pix_fmt: str = "yuv420p", threads: str = "glrec", preset=None) -> list[dict]:
    """Every width in ``sides`` at each height in ``at``, and every height at each width in ``at``."""
    out = [_case(codec, w, h, pix_fmt, threads, preset) for h in at for w in sides]
    return out + [_case(codec, w, h, pix_fmt, threads, preset) for w in at for h in sides if h not in at]


def hevc_cases(quick: bool) -> list[dict]:
    """libx265: a full grid of small sizes, cross-sections for each threading, preset and long sides."""
    step = 4 if quick else 2
    cases = [_case("hevc", w, h) for w in range(8, 73, step) for h in range(8, 73, step)]  # the full grid
    # yuv444p takes odd sizes: every width near the edge, a spread of heights.
    cases += [_case("hevc", w, h, "yuv444p") for w in range(40, 61) for h in range(16, 65, 8 if quick else 4)]
    cases += _cross("hevc", range(8, 73, 1 if not quick else 3), (16, 64), "yuv444p")
    for threads in ("frame-threads=1", "frame-threads=4"):
        for pix_fmt in ("yuv420p", "yuv444p"):
            cases += _cross("hevc", range(16, 81, step), (16, 64), pix_fmt, threads)
    for preset in ("ultrafast", "superfast", "medium", "slow", "placebo", "live"):
        cases += _cross("hevc", range(16, 81, step), (64,), "yuv420p", preset=preset)
        if preset in ("ultrafast", "placebo", "live"):
            cases += _cross("hevc", range(40, 61, 1 if not quick else 4), (64,), "yuv444p", preset=preset)
    # Wide and tall pictures: does a short side matter on its own?
    for long in (128, 512, 1920):
        for short in range(16, 65, 4 if not quick else 8):
            cases += [_case("hevc", long, short), _case("hevc", short, long)]
    return cases


def near_minimum_cases(codec: str, quick: bool) -> list[dict]:
    """libx264, SVT-AV1, libvpx-vp9, mjpeg and gif from their smallest sizes up to a little past where they work."""
    step = 4 if quick else 2
    if codec == "av1":
        # SVT-AV1 never finishes with one side over 64 and the other under 26 (glrec refuses
        # that); each such case would cost the whole timeout, so the grid stays at 64 a side.
        cases = [_case("av1", w, h) for w in range(2, 65, 2 * step) for h in range(2, 65, 2 * step)]
        return cases + _cross("av1", range(2, 41, step), (64,))
    pix_fmts = ("yuv420p", "nv12", "yuv444p") if codec == "h264" else ("yuv420p", "yuv444p")
    cases = [_case(codec, w, h) for w in range(2, 49, step) for h in range(2, 49, step)]
    for pix_fmt in pix_fmts[1:]:
        odd = pix_fmt == "yuv444p"
        cases += _cross(codec, range(1 if odd else 2, 41, 1 if odd and not quick else step), (16, 64), pix_fmt)
    if codec == "h264":
        cases += _cross(codec, range(2, 41, step), (16, 64), "yuv420p", "slice")
    return cases


# -- the child: encode cases, report each ---------------------------------------------------


def _encode_case(case: dict) -> dict:
    import numpy as np

    from glrec.encoders.cpu import encoder as cpu_encoder
    from glrec.errors import GlrecError
    from glrec.frame import HostFrame
    from glrec.options import VideoOptions

    codec, w, h, pix_fmt = case["codec"], case["w"], case["h"], case["pix_fmt"]
    preset, live = case["preset"], case["preset"] == "live"
    extra = ()
    if case["threads"].startswith("frame-threads"):  # the escape hatch replaces glrec's x265-params: keep its part
        extra = (("x265-params", f"log-level=error:{case['threads']}"),)
    options = VideoOptions.create(
        (w, h), 30, codec=codec, pix_fmt=pix_fmt, encoder="auto", live=live, preset=None if live else preset,
        encoder_options=extra,
    )  # fmt: skip
    thread_type = cpu_encoder._THREAD_TYPE
    if case["threads"] == "slice":
        cpu_encoder._THREAD_TYPE = "SLICE"
    try:
        asked = options.request("cpu")
        encoder = cpu_encoder.CpuEncoder(asked.facts, asked.options)
    except GlrecError as exc:
        return {"open": "refused", "message": str(exc)}
    finally:
        cpu_encoder._THREAD_TYPE = thread_type
    ew, eh = options.encoded_size
    rng = np.random.default_rng(w * 1000 + h)
    packets = 0
    for i in range(3):
        if pix_fmt == "yuv444p":
            data = rng.integers(0, 256, (3, eh, ew), dtype=np.uint8)
        else:
            data = rng.integers(0, 256, (eh * 3 // 2, ew), dtype=np.uint8)
        packets += len(encoder.encode(HostFrame(i, pix_fmt, ew, eh, data)))
    packets += len(encoder.flush())
    encoder.close()
    return {"open": "ok", "packets": packets}


def child_main(cases_file: str, repeat: int) -> None:
    import gc

    cases = json.loads(Path(cases_file).read_text())
    helper = os.environ.get("GLREC_VG_HELPER")
    lib = ctypes.CDLL(helper) if helper else None
    if lib is not None:
        lib.glrec_vg_errors.restype = ctypes.c_ulong
    # Load each encoder's library once at a size far from any edge, before counting: the
    # dynamic loader's own reads (strncmp over rpaths) are memcheck false positives.
    for codec in sorted({c["codec"] for c in cases}):
        _encode_case(_case(codec, 256, 256))
    for i, case in enumerate(cases):
        print(f"start {i}", flush=True)
        if lib is not None:
            lib.glrec_vg_mark(f"@@case {i} {json.dumps(case)}".encode())
            before = lib.glrec_vg_errors()
        try:
            for _ in range(repeat):
                result = _encode_case(case)
                gc.collect()  # the codec context is freed here, inside this case
        except Exception as exc:  # an encoder that raises is a finding, not a grid failure
            result = {"open": "error", "message": f"{type(exc).__name__}: {exc}"}
        if lib is not None:
            result["memcheck_errors"] = int(lib.glrec_vg_errors() - before)
        print(f"done {i} {json.dumps(result)}", flush=True)


# -- the parent: run cases in children, recover from crashes and hangs ------------------------


def build_helper(tmp: Path) -> Path | None:
    """The valgrind client-request helper (None without gcc or valgrind's headers)."""
    if shutil.which("gcc") is None or not Path("/usr/include/valgrind/valgrind.h").exists():
        return None
    src, lib = tmp / "vg.c", tmp / "vg.so"
    src.write_text(_HELPER_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    return lib


def run_cases(cases: list[dict], *, valgrind: bool, repeat: int, timeout: float, tmp: Path, helper: Path | None):
    """Every case's result, in order; a crash or a hang ends that case and the next child takes the rest."""
    results: list[dict | None] = [None] * len(cases)
    logs: list[Path] = []
    at = 0
    while at < len(cases):
        chunk = cases[at:]
        cases_file = tmp / f"cases-{at}.json"
        cases_file.write_text(json.dumps(chunk))
        cmd = [sys.executable, __file__, "--child", str(cases_file), "--repeat", str(repeat)]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SVT_LOG": "1"}
        if valgrind:
            log = tmp / f"memcheck-{at}.log"
            logs.append(log)
            memcheck = ["valgrind", "--error-limit=no", "--undef-value-errors=no", "--num-callers=6"]
            cmd = [*memcheck, f"--log-file={log}", *cmd]
            env.update(PYTHONMALLOC="malloc", GLREC_VG_HELPER=str(helper))
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        lines: queue.Queue[str | None] = queue.Queue()

        def pump(p=proc, q=lines):
            for line in p.stdout:
                q.put(line)
            q.put(None)

        threading.Thread(target=pump, daemon=True).start()
        current = None
        startup = timeout * 4  # valgrind needs a while to start Python and import PyAV
        while True:
            try:
                line = lines.get(timeout=startup if current is None else timeout)
            except queue.Empty:
                proc.kill()
                proc.wait()
                index = at + (current if current is not None else 0)
                results[index] = {"open": "hang", "message": f"no answer within {timeout:g} s"}
                at = index + 1
                break
            if line is None:
                rc = proc.wait()
                if current is not None:
                    index = at + current
                    results[index] = {"open": "crash", "message": f"the process died (exit status {rc})"}
                    at = index + 1
                else:
                    at = len(cases)
                break
            word, _, rest = line.strip().partition(" ")
            if word == "start":
                current = int(rest)
            elif word == "done":
                i, _, payload = rest.partition(" ")
                results[at + int(i)] = json.loads(payload)
                current = None
                done = sum(r is not None for r in results)
                if done % 100 == 0:
                    print(f"  {done}/{len(cases)} cases", file=sys.stderr, flush=True)
    return results, logs


def memcheck_sites(logs: list[Path]) -> dict[str, list[str]]:
    """For each case that memcheck flagged first: the first stack line of each error (what overran, where)."""
    sites: dict[str, list[str]] = {}
    for log in logs:
        case = None
        lines = log.read_text(errors="replace").splitlines()
        for n, line in enumerate(lines):
            text = line.split("== ", 1)[-1] if "== " in line else line
            if "@@case " in line:
                case = line.split("@@case ", 1)[1]
            elif case and (text.startswith("Invalid ") or text.startswith("Conditional jump")):
                where = lines[n + 1].split("== ", 1)[-1].strip() if n + 1 < len(lines) else ""
                sites.setdefault(case, []).append(f"{text.strip()} {where}")
    return sites


def classify(cases: list[dict], results: list[dict], tmp: Path, helper: Path, timeout: float) -> None:
    """Run each flagged case alone under memcheck; add ``access`` (the kinds of invalid access) to its result."""
    for n, (case, result) in enumerate(zip(cases, results, strict=True)):
        if not result.get("memcheck_errors") and result["open"] not in ("crash", "hang"):
            continue
        sub = tmp / f"classify-{n}"
        sub.mkdir()
        _, logs = run_cases([case], valgrind=True, repeat=1, timeout=timeout, tmp=sub, helper=helper)
        kinds = set()
        for line in logs[0].read_text(errors="replace").split("@@case", 1)[-1].splitlines():
            text = line.split("== ", 1)[-1]
            if text.startswith("Invalid "):
                kinds.add(text.split(" of size")[0])
        result["access"] = sorted(kinds)


def summarise(cases: list[dict], results: list[dict]) -> dict:
    """Per codec and pixel format: how many cases, which were bad (memory errors, crash, hang) or refused."""
    out: dict = {}
    for case, result in zip(cases, results, strict=True):
        key = f"{case['codec']} {case['pix_fmt']}"
        entry = out.setdefault(key, {"cases": 0, "bad": [], "refused": [], "errors": []})
        entry["cases"] += 1
        size = f"{case['w']}x{case['h']}"
        tag = f"{size} {case['threads']}" + (f" {case['preset']}" if case["preset"] else "")
        if result["open"] in ("crash", "hang") or result.get("memcheck_errors"):
            entry["bad"].append(f"{tag}: {result['open']} {result.get('memcheck_errors', '')}".strip())
        elif result["open"] == "refused":
            entry["refused"].append(tag)
        elif result["open"] == "error":
            entry["errors"].append(f"{tag}: {result['message'][:120]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated codecs (hevc,h264,av1,vp9,mjpeg,gif); default all")
    ap.add_argument("--quick", action="store_true", help="a coarser, smaller grid")
    ap.add_argument("--no-valgrind", action="store_true", help="crashes only (each case --repeat times)")
    ap.add_argument("--repeat", type=int, default=None, help="encodes per case (default 1 under valgrind, else 20)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds a case may take (default 120/20)")
    ap.add_argument("--jobs", type=int, default=1, help="children at once")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--cases", help="a JSON file of cases to run instead of the grids")
    ap.add_argument("--classify", action="store_true", help="re-run flagged cases alone: writes or reads?")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(args.child, args.repeat or 1)
        return
    valgrind = not args.no_valgrind and shutil.which("valgrind") is not None
    repeat = args.repeat or (1 if valgrind else 20)
    timeout = args.timeout or (120.0 if valgrind else 20.0)
    codecs = (args.only or "hevc,h264,av1,vp9,mjpeg,gif").split(",")
    cases: list[dict] = []
    if args.cases:
        cases = [_case(**c) for c in json.loads(Path(args.cases).read_text())]
    for codec in codecs if not args.cases else []:
        cases += hevc_cases(args.quick) if codec == "hevc" else near_minimum_cases(codec, args.quick)
    print(f"{len(cases)} cases, {'memcheck' if valgrind else f'{repeat} encodes each, crashes only'}", file=sys.stderr)
    started = time.time()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        helper = build_helper(tmp) if valgrind else None
        if valgrind and helper is None:
            sys.exit("valgrind needs gcc and valgrind's headers (apt-get install gcc valgrind); or pass --no-valgrind")
        jobs = max(1, args.jobs)
        parts = [cases[i::jobs] for i in range(jobs)]
        outputs: list = [None] * jobs

        def work(k: int) -> None:
            sub = tmp / f"job{k}"
            sub.mkdir()
            outputs[k] = run_cases(parts[k], valgrind=valgrind, repeat=repeat, timeout=timeout, tmp=sub, helper=helper)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ordered = [(c, r) for k in range(jobs) for c, r in zip(parts[k], outputs[k][0], strict=True)]
        sites = memcheck_sites([log for k in range(jobs) for log in outputs[k][1]])
        if args.classify and helper is not None:
            classify([c for c, _ in ordered], [r for _, r in ordered], tmp, helper, timeout)
    import av

    report = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "pyav": av.__version__,
        "libavcodec": ".".join(map(str, av.library_versions["libavcodec"])),
        "detector": "valgrind memcheck (invalid reads/writes per case)" if valgrind else f"crash, {repeat} encodes",
        "frames_per_case": 3,
        "seconds": round(time.time() - started),
        "summary": summarise([c for c, _ in ordered], [r for _, r in ordered]),
        "memcheck_sites": {k: sorted(set(v))[:6] for k, v in list(sites.items())[:400]},
        "cases": [{**c, **r} for c, r in ordered],
    }
    for key, entry in report["summary"].items():
        counts = f"{entry['cases']} cases, {len(entry['bad'])} bad, {len(entry['refused'])} refused"
        print(f"{key}: {counts}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
