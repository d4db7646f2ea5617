#!/bin/bash
# The sixteenth H200 session's plan (written 2026-12-04, when no device was lent): the GPU JPEG shards from the start.
#   bash benchmarks/gpu/h200_sixteenth.sh early    # 16,000 samples, 16 workers, GL JPEG: the EGL context begun as each
#                                                  #   worker starts (glrec.gl.early) against made at the first draw
#                                                  #   (GLREC_BENCH_EARLY=0), two rounds alternating
#   bash benchmarks/gpu/h200_sixteenth.sh startup  # the CLI on 1,600 samples with -vv: each worker's "made in, waited
#                                                  #   for" line, so the overlap is read, not inferred
#   bash benchmarks/gpu/h200_sixteenth.sh fence    # the fence polled (GLREC_BENCH_FENCE_POLL) and __GL_YIELD=USLEEP,
#                                                  #   now that the workers are CPU-bound, against as is
#   bash benchmarks/gpu/h200_sixteenth.sh ab       # this tree against .before/ (the tree of stop 51), ABBA
#   bash benchmarks/gpu/h200_sixteenth.sh tests    # the GPU tier
# Carry .gpu (.fake for tests, .before for ab). Results land in $OUT. Ran on 2026-12-05: docs/guides/performance.md.
source benchmarks/gpu/shards_prelude.sh
for mode in "$@"; do
case "$mode" in
early) echo "ran on 2026-12-05 (the early context cost 3-8 %); glrec.gl.early is gone since, so there is nothing to compare" ;;
startup)
  python3 - > /tmp/spec16.toml <<'PY'
import pathlib, re
text = pathlib.Path("examples/dataset.toml").read_text()
text = re.sub(r"(?m)^samples = \d+", "samples = 1600", re.sub(r"(?m)^shard_size = \d+", "shard_size = 25", text))
print(re.sub(r'(?m)^rgb = "png".*$', 'rgb = "jpg"\nrgb_encoder = "gl"', text))
PY
  for r in 1 2; do
    rm -rf /dev/shm/glrec-startup
    timeout 120 python3 -m glrec dataset /tmp/spec16.toml -o /dev/shm/glrec-startup --workers 16 -vv 2>&1 \
      | grep -e "begun early" -e "samples in" | tee "$OUT/startup-$r.txt"
  done
  rm -rf /dev/shm/glrec-startup
  ;;
fence) run "fence" fence.json --no-png --rounds 2 --env GLREC_BENCH_FENCE_POLL=0.0005
       run "yield" yield.json --no-png --rounds 2 --env __GL_YIELD=USLEEP ;;
ab) ab_runs --no-png ;;
tests) OUT=$OUT bash benchmarks/gpu/h200_ninth.sh tests ;;
*) echo "unknown mode $mode" ;;
esac
done
