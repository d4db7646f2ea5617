#!/bin/bash
# The fourth H200 session of 2026-12-02: before (HEAD e4e2029 in .before/) and after, alternating in one run.
#   bash benchmarks/gpu/h200_fourth.sh bench   # gpu_ceiling's Recorder rows, the training stream
#   bash benchmarks/gpu/h200_fourth.sh tests   # the GPU tier of what changed
#   bash benchmarks/gpu/h200_fourth.sh more    # the second run (see below)
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
before() { (PYTHONPATH="$PWD/.before:$PYTHONPATH" "$@"); }
if [ "$1" = bench ]; then
  for r in ${ROUNDS:-1 2}; do
    for who in after before; do
      root=$( [ $who = before ] && echo .before/ || echo "" )
      python3 ${root}benchmarks/gpu_ceiling.py --only gl:shared,nvjpeg:b1,pipe:recorder,pipe:recorder-gl --frames 600 \
        --json "$OUT/gpu-ceiling-$who-$r.json" 2>&1 | grep -v nvjpeg2k | tail -12
    done
  done
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200"
  python3 $S --samples 4096 --batch-size 256 --with-meta --gl-bound --name fourth-640x480-after 2>&1 | tail -4
  before python3 .before/$S --samples 4096 --batch-size 256 --name fourth-640x480-before 2>&1 | tail -3
  python3 $S --samples 32768 --size 128x128 --passes rgb,depth --batch-size 4096 --with-meta --gl-bound \
    --name fourth-128x128-after 2>&1 | tail -4
  before python3 .before/$S --samples 32768 --size 128x128 --passes rgb,depth --batch-size 4096 \
    --name fourth-128x128-before 2>&1 | tail -3
  cp benchmarks/results/*fourth* .before/benchmarks/results/*fourth* "$OUT/" 2>/dev/null
  ls "$OUT"
elif [ "$1" = tests ]; then
  python3 -m pytest -q -p no:cacheprovider -m "gpu or gl" tests/gpu/test_dataset_stream_gpu.py tests/dataset/test_batch_annotations.py \
    tests/dataset/test_dataset_layers.py tests/dataset/test_dataset_stream_deferred.py tests/dataset/test_dataset_stream.py \
    tests/dataset/test_dataset_batch_draws.py tests/sinks tests/scenes 2>&1 | tail -8 | tee "$OUT/gpu-tests.txt"
  python3 -m pytest -q -p no:cacheprovider -m gpu 2>&1 | tail -8 | tee "$OUT/gpu-tier.txt"
fi
# Second device run of the session (after the batch check, lazy box tables and the vectorised draw loop):
#   bash benchmarks/gpu/h200_fourth.sh more
if [ "$1" = more ]; then
  python3 benchmarks/gl_jpeg.py --sizes 1920x1080,1280x720 --scenes plasma,cube --frames 600 --repeat 3 \
    --json "$OUT/gl-jpeg.json" 2>&1 | grep -v nvjpeg2k | tail -14
  nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader -lms 100 > "$OUT/gpu-util.csv" &
  smi=$!
  python3 benchmarks/gpu_ceiling.py --frames 600 --json "$OUT/gpu-ceiling-procs.json" --only \
    gl:shared,nvjpeg:b1,procs:1x-recorder-gl,procs:2x-recorder-gl,procs:4x-recorder-gl,procs:8x-recorder-gl,procs:1x-recorder,procs:2x-recorder,procs:4x-recorder \
    2>&1 | grep -v nvjpeg2k | tail -16
  kill $smi
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds 2 --tag nvidia-h200"
  python3 $S --samples 32768 --size 128x128 --passes rgb,depth --batch-size 4096 --with-meta \
    --name fourth-b-128x128-after 2>&1 | tail -3
  python3 .before/$S --samples 32768 --size 128x128 --passes rgb,depth --batch-size 4096 \
    --name fourth-b-128x128-before 2>&1 | tail -2
  python3 $S --samples 4096 --batch-size 256 --with-meta --name fourth-b-640x480-after 2>&1 | tail -3
  python3 .before/$S --samples 4096 --batch-size 256 --name fourth-b-640x480-before 2>&1 | tail -2
  python3 benchmarks/gpu/stream_profile.py --device cuda --size 128x128 --passes rgb,depth --batch 4096 --batches 6 \
    --top 16 2>&1 | grep -v nvjpeg2k > "$OUT/stream-profile-b-128.txt"; head -3 "$OUT/stream-profile-b-128.txt"
  cp benchmarks/results/*fourth-b* .before/benchmarks/results/*fourth-b* "$OUT/" 2>/dev/null
  python3 -m pytest -q -p no:cacheprovider -m gpu 2>&1 | tail -3 | tee "$OUT/gpu-tier-b.txt"
  python3 -m pytest -q -p no:cacheprovider -m "gpu or gl" tests/dataset/test_dataset_layers.py tests/dataset/test_dataset_packed.py \
    tests/dataset/test_dataset_stream_deferred.py tests/dataset/test_dataset_stream.py tests/dataset/test_batch_annotations.py \
    tests/dataset/test_dataset_batch_draws.py tests/scenes tests/sinks 2>&1 | tail -3 | tee "$OUT/gl-tests-b.txt"
fi
