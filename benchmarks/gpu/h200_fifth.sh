#!/bin/bash
# The fifth H200 session (2026-12-03): before (HEAD cfbe131 in .before/) and after, alternating in one run.
#   bash benchmarks/gpu/h200_fifth.sh timeline   # where a stream batch's time goes (stream_timeline.py)
#   bash benchmarks/gpu/h200_fifth.sh stream     # dataset_stream.py, before and after
#   bash benchmarks/gpu/h200_fifth.sh tests      # the GPU tier
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
before() { (PYTHONPATH="$PWD/.before:$PYTHONPATH" "$@"); }
T=benchmarks/gpu/stream_timeline.py
small="--device cuda --size 128x128 --passes rgb,depth --batch 4096 --batches 8"
large="--device cuda --size 640x480 --passes rgb,depth,instance,semantic,normal --batch 256 --batches 16"
quiet() { grep -v -e Warning -e Generates -e "box table" -e "planned gen" -e "slot acq"; }
case "$1" in
timeline)
  for r in ${ROUNDS:-1 2}; do
    for who in after before; do
      root=$( [ $who = before ] && echo .before/ || echo "" )
      echo "== $who round $r"
      python3 ${root}$T $small 2>&1 | quiet
      python3 ${root}$T $large 2>&1 | quiet
    done
  done
  echo "== after, back faces culled (an experiment)"
  python3 $T $small --cull 2>&1 | grep -e instrumented -e "GPU"
  python3 $T $large --cull 2>&1 | grep -e instrumented -e "GPU"
  ;;
stream)
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds ${ROUNDS:-2} --tag nvidia-h200"
  python3 $S --samples 4096 --batch-size 256 --with-meta --gl-bound --name fifth-640x480-after 2>&1 | tail -4
  before python3 .before/$S --samples 4096 --batch-size 256 --name fifth-640x480-before 2>&1 | tail -3
  python3 $S --samples 32768 --size 128x128 --passes rgb,depth --batch-size 4096 --with-meta --gl-bound \
    --name fifth-128x128-after 2>&1 | tail -4
  before python3 .before/$S --samples 32768 --size 128x128 --passes rgb,depth --batch-size 4096 \
    --name fifth-128x128-before 2>&1 | tail -3
  cp benchmarks/results/*fifth* .before/benchmarks/results/*fifth* "$OUT/" 2>/dev/null
  ;;
tests)
  python3 -m pytest -q -p no:cacheprovider -m gpu 2>&1 | tail -8 | tee "$OUT/gpu-tier.txt"
  ;;
esac
# The clear of the layered targets, each way (clear_probe.py), at both sizes, bytes checked:
if [ "$1" = clear ]; then
  python3 benchmarks/gpu/clear_probe.py --size 640x480 --passes rgb,depth,instance,semantic,normal --batch 256 --check 2>&1 | grep -v -e Warning -e Generates
  python3 benchmarks/gpu/clear_probe.py --size 128x128 --passes rgb,depth --batch 4096 --check 2>&1 | grep -v -e Warning -e Generates
  python3 $T $small 2>&1 | quiet
  python3 $T $large 2>&1 | quiet
fi
# After the masked targets: where the time goes, then the stream before / after.
if [ "$1" = final ]; then
  python3 $T $small 2>&1 | quiet
  python3 $T $large 2>&1 | quiet
  bash "$0" stream
fi
# The last run (planned, not run: no device time left): the stream on main, and the GPU tier (bounded).
if [ "$1" = last ]; then
  python3 $T $large 2>&1 | grep -e instrumented -e "GPU (" -e "packer run" -e "plan_0"
  python3 $T $small 2>&1 | grep -e instrumented -e "GPU (" -e "packer run" -e "plan_0"
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds 2 --tag nvidia-h200"
  python3 $S --samples 4096 --batch-size 256 --gl-bound --name fifth-640x480-last 2>&1 | grep median
  python3 $S --samples 32768 --size 128x128 --passes rgb,depth --batch-size 4096 --name fifth-128x128-last 2>&1 | grep median
  timeout ${TIER_S:-170} python3 -m pytest -q -p no:cacheprovider -m "gpu or gl" tests/gpu/test_dataset_stream_gpu.py \
    tests/gpu/test_dataset_colour_gpu.py tests/dataset/test_dataset_layers.py tests/dataset/test_plan_ahead.py \
    tests/dataset/test_dataset_stream_deferred.py tests/dataset/test_dataset_packed.py tests/scenes 2>&1 | tail -4
  timeout ${GPU_S:-100} python3 -m pytest -q -p no:cacheprovider -m gpu -x 2>&1 | tail -4
fi
