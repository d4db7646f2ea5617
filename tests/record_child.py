"""A recording process for the crash, signal and full-disk tests (run as a script).

Records the ``bars`` scene (its time code names every frame) and prints one
line per frame, flushed, so the parent knows how far it got when it kills it:

    progress <submitted> <encoded> <written>

With ``--fsize BYTES`` the process may write files of at most that size
(RLIMIT_FSIZE, with SIGXFSZ ignored so writes fail with EFBIG instead of the
process dying); the outcome is printed as one ``result {json}`` line.
With ``--no-close`` the script ends without closing the recorder (the exit
safety net must finish the file). With ``--pause-after N`` it stops after N
frames, prints ``paused``, and waits to be killed: the parent kills it in a known
state, however late it reads the line (a loaded machine reads late).
"""

from __future__ import annotations

import argparse
import json
import resource
import signal
import sys

import glrec


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("output")
    p.add_argument("--frames", type=int, default=100_000)
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--size", default="192x128")
    p.add_argument("--codec", default="h264")
    p.add_argument("--gop", type=int)
    p.add_argument("--fsize", type=int)
    p.add_argument("--no-close", action="store_true")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--pause-after", type=int)
    args = p.parse_args()
    if args.fsize is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (args.fsize, args.fsize))

    rec = glrec.Recorder(args.output, size=args.size, fps=args.fps, codec=args.codec, gop=args.gop,
                         encoder="png" if args.codec == "png" else "cpu",
                         ring=3, queue_size=8, overwrite=args.overwrite)  # fmt: skip
    if args.no_close:
        for _ in range(args.frames):
            rec.render("bars")
        print(f"rendered {rec.frames_submitted}", flush=True)
        return 0
    try:
        with rec:
            for _ in range(args.frames):
                rec.render("bars")
                print(f"progress {rec.frames_submitted} {rec.frames_encoded} {rec.frames_written}", flush=True)
                if rec.frames_submitted == args.pause_after:
                    print("paused", flush=True)
                    while True:
                        signal.pause()
    except glrec.GlrecError as exc:
        out = {"type": type(exc).__name__, "message": str(exc), "errno": getattr(exc, "errno", None),
               "frames_written": exc.frames_written if isinstance(exc, glrec.OutputError) else None,
               "frames_kept": exc.frames_kept if isinstance(exc, glrec.OutputError) else None,
               "submitted": rec.frames_submitted}  # fmt: skip
        print("result " + json.dumps(out), flush=True)
        return 1
    print("result " + json.dumps({"type": None, "frames": rec.close().frames}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
