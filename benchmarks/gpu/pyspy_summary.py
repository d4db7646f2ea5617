"""Summarise a py-spy raw profile (``py-spy record -f raw``) per thread kind: share of samples, own and inclusive.

Threads are grouped by name without their pool number (``glrec-dataset-encode_3`` -> ``glrec-dataset-encode``)
and by process kind (a dataset worker, ``glrec._dataset_worker``, ``glrec.dataset.files.local`` before 2026-12-05,
or the parent). Without ``--idle`` py-spy records running threads only, so the shares are of CPU time.

    python benchmarks/gpu/pyspy_summary.py pyspy-shards.txt [--top 30]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    threads: Counter[str] = Counter()
    own: defaultdict[str, Counter[str]] = defaultdict(Counter)
    inclusive: defaultdict[str, Counter[str]] = defaultdict(Counter)
    total = 0
    with open(args.raw) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            n, frames = int(count), stack.split(";")
            at = next((i for i, fr in enumerate(frames) if fr.startswith("thread (")), None)
            if at is None:
                continue
            name = re.sub(r"_\d+$", "", frames[at].split(": ", 1)[-1])
            kind = (
                "worker"
                if at and ("files.local" in frames[at - 1] or "_dataset_worker" in frames[at - 1])
                else "parent"
            )
            key = f"{kind}:{name}"
            calls = [re.sub(r":\d+\)$", ")", fr) for fr in frames[at + 1 :]]
            threads[key] += n
            total += n
            if calls:
                own[key][calls[-1]] += n
                for call in set(calls):
                    inclusive[key][call] += n
    print(f"samples {total}")
    for key, n in threads.most_common():
        print(f"\n== {key}: {n} samples ({n / total:.1%})\n own:")
        for call, c in own[key].most_common(args.top // 2):
            print(f"  {c / n:6.1%} {call}")
        print(" inclusive:")
        for call, c in inclusive[key].most_common(args.top):
            print(f"  {c / n:6.1%} {call}")


if __name__ == "__main__":
    main()
