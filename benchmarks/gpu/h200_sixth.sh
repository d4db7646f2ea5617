#!/bin/bash
# The sixth H200 session (2026-12-03): main 1ad36e8 in .before/ ("before") against the tree ("after"), in one run.
#   bash benchmarks/gpu/h200_sixth.sh gc       # stream_timeline.py with Python's GC on and frozen
#   bash benchmarks/gpu/h200_sixth.sh stream   # dataset_stream.py, before and after, both sizes
#   bash benchmarks/gpu/h200_sixth.sh tests    # the GPU tier
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
before() { (PYTHONPATH="$PWD/.before:$PYTHONPATH" "$@"); }
T=benchmarks/gpu/stream_timeline.py
small="--device cuda --size 128x128 --passes rgb,depth --batch 4096 --batches 8"
large="--device cuda --size 640x480 --passes rgb,depth,instance,semantic,normal --batch 256 --batches 16"
quiet() { grep -v -e Warning -e Generates -e "slot acq" -e "planned gen"; }
for mode in "$@"; do
case "$mode" in
sets)  # (run while two target sets and a mapped box-table read were tried; both since taken out: see the note)
  echo "two target sets were measured with stream_timeline.py --sets 1 / 2 at the commit of that run"
  ;;
gc)  # Python's garbage collector on, and frozen after the warm-up (what a training script can do)
  for args in "$large" "$small"; do
    python3 $T $args 2>&1 | quiet
    python3 $T $args --gc freeze 2>&1 | quiet
  done
  ;;
stream)
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds ${ROUNDS:-2} --tag nvidia-h200"
  python3 $S --samples 8192 --batch-size 256 --gl-bound --with-meta --name sixth-640x480-after 2>&1 | grep median
  before python3 .before/$S --samples 8192 --batch-size 256 --name sixth-640x480-before 2>&1 | grep median
  python3 $S --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096 --gl-bound --with-meta \
    --name sixth-128x128-after 2>&1 | grep median
  before python3 .before/$S --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096 \
    --name sixth-128x128-before 2>&1 | grep median
  tar -cf "$OUT/stream-results.tar" benchmarks/results/*sixth* .before/benchmarks/results/*sixth* 2>/dev/null
  ;;
tests)
  GLREC_FAKE_DRIVERS_DIR=$PWD/.fake timeout ${TIER_S:-240} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE 2>&1 \
    | grep -v -e Warning -e "^  " -e "^$" | tail -${TAIL:-12}
  ;;
esac
done
