#!/bin/bash
# The fourth H200 session of 2026-12-02: before (HEAD e4e2029 in .before/) and after, alternating in one run.
#   bash benchmarks/gpu/h200_fourth.sh bench   # gpu_ceiling's Recorder rows, the training stream
#   bash benchmarks/gpu/h200_fourth.sh tests   # the GPU tier of what changed
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
else
  python3 -m pytest -q -p no:cacheprovider -m "gpu or gl" tests/gpu/test_dataset_stream_gpu.py tests/dataset/test_batch_annotations.py \
    tests/dataset/test_dataset_layers.py tests/dataset/test_dataset_stream_deferred.py tests/dataset/test_dataset_stream.py \
    tests/dataset/test_dataset_batch_draws.py tests/sinks tests/scenes 2>&1 | tail -8 | tee "$OUT/gpu-tests.txt"
  python3 -m pytest -q -p no:cacheprovider -m gpu 2>&1 | tail -8 | tee "$OUT/gpu-tier.txt"
fi
