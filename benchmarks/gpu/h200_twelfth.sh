#!/bin/bash
# The twelfth H200 session (2026-12-04): issues 32 and 33 measured as their texts say, on this tree, beside the tree
# the issues were filed on (.before/: git archive 2568e0f, its commit in .before/COMMIT) where the command exists there.
#   bash benchmarks/gpu/h200_twelfth.sh record   # issue 32: gpu_ceiling.py (every variant, 1080p; core rows at 720p;
#                                                #   .before's core rows), gl_jpeg.py, glrec bench nvjpeg,gl both sizes
#   bash benchmarks/gpu/h200_twelfth.sh procs    # issue 32: glrec bench --processes 2,4,8, then nvjpeg,gl under MPS
#   bash benchmarks/gpu/h200_twelfth.sh stream   # issue 33: dataset_stream.py 640x480 (batch 1,64,256,1024) and
#                                                #   128x128 colour + depth, CUDA consumer; .before at batch 64 and 256
#   bash benchmarks/gpu/h200_twelfth.sh shards   # issue 33: dataset_workers.py --workers 1,4,8,16 --samples 800,
#                                                #   this tree (PNG, CPU JPEG, nvJPEG, GL JPEG) and .before (PNG, JPEG, nvJPEG)
#   bash benchmarks/gpu/h200_twelfth.sh tests    # the GPU tier (as the ninth session ran it)
# Every step has its own timeout, so one that hangs costs its own time only. Results land in $OUT. Carry .gpu, .before
# and .fake (the NVENC stand-in alone: fake_drivers.build(Path(".fake"), ("nvenc",)); see benchmarks/README.md).
set -u
source .gpu/boot.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -m compileall -q -j 16 glrec benchmarks /tmp/gpu-site/site .before/glrec > /dev/null 2>&1
quiet() { grep -v -i -e nvjpeg2k -e nvtiff -e Warning -e "^$"; }
BEFORE=$(cat .before/COMMIT 2>/dev/null || echo none)
for mode in "$@"; do
case "$mode" in
record)
  timeout 200 python3 benchmarks/gpu_ceiling.py --frames 600 --json "$OUT/ceiling-1080.json" 2>&1 | quiet \
    | grep -e "^gl:" -e "^nvjpeg" -e "^pipe" -e "^procs" -e "bound" | cut -c1-110
  CORE=gl:shared,nvjpeg:b1,pipe:recorder,pipe:recorder-gl
  timeout 60 python3 benchmarks/gpu_ceiling.py --frames 600 --size 1280x720 --only $CORE \
    --json "$OUT/ceiling-720.json" 2>&1 | quiet | grep -e "^gl:" -e "^nvjpeg" -e "^pipe" | cut -c1-110
  (cd .before && timeout 60 python3 benchmarks/gpu_ceiling.py --frames 600 --only gl:shared,nvjpeg:b1,pipe:recorder \
    --json "$OUT/ceiling-1080-before-$BEFORE.json" 2>&1 | quiet | grep -e "^gl:" -e "^nvjpeg" -e "^pipe" \
    | sed 's/^/before /' | cut -c1-110)
  timeout 120 python3 benchmarks/gl_jpeg.py --sizes 1920x1080,1280x720 --scenes plasma,cube --json "$OUT/gl-jpeg.json" \
    2>&1 | quiet | tail -14
  timeout 200 python3 -m glrec bench --backends nvjpeg,gl --sizes 1920x1080,1280x720 --scenes plasma,cube \
    --frames 600 --repeat 3 --baselines none --dataset-workers none --memory-frames 0 --no-plot \
    --json "$OUT/bench-nvjpeg-gl.json" 2>&1 | quiet | tail -40
  ;;
procs)
  timeout 330 python3 -m glrec bench --backends cpu,cpu-cuda,nvjpeg,gl --sizes 1920x1080 --scenes plasma,cube \
    --frames 600 --repeat 1 --processes 2,4,8 --baselines naive-pyav --no-stages --no-profile --dataset-workers none \
    --memory-frames 0 --no-plot --json "$OUT/bench-processes.json" 2>&1 | quiet | tail -40
  if command -v nvidia-cuda-mps-control >/dev/null; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
    mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
    if timeout 20 nvidia-cuda-mps-control -d; then
      timeout 150 python3 -m glrec bench --backends nvjpeg,gl --sizes 1920x1080 --scenes plasma,cube --frames 600 \
        --repeat 1 --processes 2,4,8 --baselines none --no-stages --no-profile --dataset-workers none \
        --memory-frames 0 --no-plot --json "$OUT/bench-processes-mps.json" 2>&1 | quiet | tail -25
      echo quit | timeout 20 nvidia-cuda-mps-control
    else
      echo "MPS: the control daemon did not start"; tail -3 /tmp/mps-log/control.log 2>/dev/null
    fi
  else
    echo "MPS: nvidia-cuda-mps-control is not on this machine"
  fi
  ;;
stream)
  S="benchmarks/dataset_stream.py --device cuda --workers= --rounds 1 --tag nvidia-h200"
  timeout 200 python3 $S --samples 8192 --batch-size 256 --batch-sizes 1,64,1024 --gl-bound \
    --name twelfth-640-after > "$OUT/stream-640.log" 2>&1; grep -e "round" "$OUT/stream-640.log" | tail -12
  timeout 120 python3 $S --samples 65536 --size 128x128 --passes rgb,depth --batch-size 4096 --gl-bound --rounds 2 \
    --name twelfth-128-after > "$OUT/stream-128.log" 2>&1; grep -e "round" "$OUT/stream-128.log" | tail -8
  (cd .before && timeout 120 python3 benchmarks/dataset_stream_now.py --device cuda --workers= --rounds 1 \
    --tag nvidia-h200 --samples 2048 --batch-size 64 --batch-sizes 256 --name twelfth-640-before-$BEFORE \
    > "$OUT/stream-640-before.log" 2>&1; grep -e "round" "$OUT/stream-640-before.log" | sed 's/^/before /' \
    || tail -5 "$OUT/stream-640-before.log")
  tar -cf "$OUT/stream-results.tar" benchmarks/results/*twelfth* .before/benchmarks/results/*twelfth* 2>/dev/null
  ;;
shards)
  D="--shard-size 25 --rounds 1 --machine nvidia-h200 --samples 800 --workers ${SH_W:-1,4,8,16}"
  timeout 330 python3 benchmarks/dataset_workers.py $D --jpeg --nvjpeg --gl-jpeg --json "$OUT/shards-800.json" \
    > "$OUT/shards-800.log" 2>&1; grep -e "workers=" "$OUT/shards-800.log" | grep -v "^round"
  grep -q "failed (exit" "$OUT/shards-800.log" && tail -30 "$OUT/shards-800.log"
  (cd .before && timeout 200 python3 benchmarks/dataset_workers.py $D --jpeg --nvjpeg \
    --json "$OUT/shards-800-before-$BEFORE.json" > "$OUT/shards-800-before.log" 2>&1; \
    grep -e "workers=" "$OUT/shards-800-before.log" | grep -v "^round" | sed 's/^/before /')
  ;;
tests)
  OUT=$OUT bash benchmarks/gpu/h200_ninth.sh tests
  ;;
esac
done
